/**
 * A local server speaking the Hugging Face Hub's HTTP API as its clients use it, so no test
 * reaches the real Hub (test/hub/hub-server.test.ts checks it against @huggingface/hub):
 *
 * - GET /api/models/{repo}/revision/{rev}: model info (`sha`: the commit);
 * - GET /api/models/{repo}/tree/{rev}?recursive=true: the file list, paginated by Link headers;
 * - HEAD/GET /{repo}/resolve/{rev}/{path}: X-Repo-Commit and ETag on every file; a large
 *   (LFS) file answers 302 to its storage URL with X-Linked-Etag (its sha256) and
 *   X-Linked-Size, as the Hub does;
 * - GET /storage/{sha256}: the bytes, with Range (206 / Content-Range);
 * - a gated repo: 401 without the right bearer token; a missing repo or file: 404 with
 *   X-Error-Code RepoNotFound / EntryNotFound / RevisionNotFound.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HubRepo {
  files: Record<string, Uint8Array>;
  /** Bearer token required (a gated repo). */
  token?: string;
  commit?: string;
}

export interface HubRequest {
  method: string;
  path: string;
  range?: string;
  authorization?: string;
}

export interface TestHub {
  url: string;
  requests: HubRequest[];
  /** The next storage GET of this path sends half its bytes, then drops the connection. */
  cutNextDownload(path: string): void;
  close(): Promise<void>;
}

/** Files at least this large are LFS files (the Hub's cut is 10 MB; small here so fixtures exercise both). */
const LFS_MIN_BYTES = 64 * 1024;
const TREE_PAGE = 3;

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
/** A git blob id, as the Hub's ETag of a regular file. */
const gitBlobId = (bytes: Uint8Array) => createHash('sha1').update(`blob ${bytes.byteLength}\0`).update(bytes).digest('hex');

export function commitOf(repo: string, spec: HubRepo): string {
  return spec.commit ?? createHash('sha1').update(repo).update(Object.keys(spec.files).sort().join('\n')).digest('hex');
}

export async function startTestHub(repos: Record<string, HubRepo>): Promise<TestHub> {
  const requests: HubRequest[] = [];
  const cuts = new Set<string>();
  const blobs = new Map<string, Uint8Array>();
  for (const spec of Object.values(repos)) for (const bytes of Object.values(spec.files)) blobs.set(sha256(bytes), bytes);

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
    res.end(JSON.stringify(body));
  };
  const notFound = (res: ServerResponse, code: string, message: string) => json(res, 404, { error: message }, { 'x-error-code': code });

  /** The repo, after the gate; null when the answer has been sent. */
  const repoFor = (req: IncomingMessage, res: ServerResponse, name: string, revision: string): HubRepo | null => {
    const spec = repos[name];
    if (spec === undefined) {
      // The Hub answers 401 for a repo that does not exist when the caller is anonymous (it might be private), 404 with a token.
      if (req.headers.authorization === undefined) json(res, 401, { error: 'Repository not found' }, { 'x-error-code': 'RepoNotFound' });
      else notFound(res, 'RepoNotFound', 'Repository not found');
      return null;
    }
    if (spec.token !== undefined && req.headers.authorization !== `Bearer ${spec.token}`) {
      json(res, 401, { error: `Access to model ${name} is restricted. You must have access to it and be authenticated to access it. Please log in.` }, { 'x-error-code': 'GatedRepo' });
      return null;
    }
    if (revision !== 'main' && revision !== 'HEAD' && revision !== commitOf(name, spec)) {
      notFound(res, 'RevisionNotFound', `Invalid rev id: ${revision}`);
      return null;
    }
    return spec;
  };

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://hub.test');
    const path = decodeURIComponent(url.pathname);
    requests.push({ method: req.method!, path, range: req.headers.range, authorization: req.headers.authorization });
    // Keep-alive, as the Hub answers: a server closing each connection after its response trips Node 24's
    // fetch when a response's body is left unread (undici's parser asserts it is not paused). A cut
    // download destroys its own socket, which is never reused.

    let match = /^\/api\/models\/([^/]+\/[^/]+)\/revision\/([^/]+)$/.exec(path);
    if (match) {
      const spec = repoFor(req, res, match[1]!, match[2]!);
      if (!spec) return;
      return json(res, 200, {
        _id: createHash('sha1').update(match[1]!).digest('hex').slice(0, 24),
        id: match[1],
        sha: commitOf(match[1]!, spec),
        private: false,
        gated: spec.token ? 'manual' : false,
        downloads: 0,
        likes: 0,
        lastModified: '2026-01-01T00:00:00.000Z',
        siblings: Object.keys(spec.files).map((rfilename) => ({ rfilename })),
      });
    }

    match = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/([^/]+)(?:\/(.*))?$/.exec(path);
    if (match) {
      const spec = repoFor(req, res, match[1]!, match[2]!);
      if (!spec) return;
      const recursive = url.searchParams.get('recursive') === 'true';
      const prefix = match[3] ? `${match[3]}/` : '';
      const entries: unknown[] = [];
      const dirs = new Set<string>();
      for (const [file, bytes] of Object.entries(spec.files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
        if (!file.startsWith(prefix)) continue;
        const rest = file.slice(prefix.length);
        if (!recursive && rest.includes('/')) {
          dirs.add(prefix + rest.split('/')[0]);
          continue;
        }
        for (let i = rest.indexOf('/'); recursive && i >= 0; i = rest.indexOf('/', i + 1)) dirs.add(prefix + rest.slice(0, i));
        entries.push({
          type: 'file',
          oid: gitBlobId(bytes),
          size: bytes.byteLength,
          path: file,
          ...(bytes.byteLength >= LFS_MIN_BYTES ? { lfs: { oid: sha256(bytes), size: bytes.byteLength, pointerSize: 134 } } : {}),
        });
      }
      const all = [...[...dirs].map((dir) => ({ type: 'directory', oid: gitBlobId(new TextEncoder().encode(dir)), size: 0, path: dir })), ...entries];
      const cursor = Number(url.searchParams.get('cursor') ?? 0);
      const page = all.slice(cursor, cursor + TREE_PAGE);
      const headers: Record<string, string> = {};
      if (cursor + TREE_PAGE < all.length) {
        const next = new URL(url.href.replace('http://hub.test', `http://${req.headers.host}`));
        next.searchParams.set('cursor', String(cursor + TREE_PAGE));
        headers.link = `<${next.href}>; rel="next"`;
      }
      return json(res, 200, page, headers);
    }

    match = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(path);
    if (match && !path.startsWith('/api/') && !path.startsWith('/storage/')) {
      const spec = repoFor(req, res, match[1]!, match[2]!);
      if (!spec) return;
      const bytes = spec.files[match[3]!];
      if (bytes === undefined) return notFound(res, 'EntryNotFound', `${match[3]} does not exist on "${match[2]}"`);
      const common = { 'x-repo-commit': commitOf(match[1]!, spec), 'accept-ranges': 'bytes' };
      if (bytes.byteLength >= LFS_MIN_BYTES) {
        res.writeHead(302, {
          ...common,
          etag: `"${sha256(bytes)}"`,
          'x-linked-etag': `"${sha256(bytes)}"`,
          'x-linked-size': String(bytes.byteLength),
          location: `/storage/${sha256(bytes)}`,
          'content-length': '0',
        });
        return res.end();
      }
      return sendBytes(req, res, bytes, { ...common, etag: `"${gitBlobId(bytes)}"` }, false);
    }

    match = /^\/storage\/([0-9a-f]{64})$/.exec(path);
    if (match && blobs.has(match[1]!)) {
      const cut = cuts.has(match[1]!);
      cuts.delete(match[1]!);
      // Storage answers with its own ETag (the content's sha256), as the Hub's CDN does.
      return sendBytes(req, res, blobs.get(match[1]!)!, { etag: `"${match[1]}"` }, cut);
    }
    notFound(res, 'EntryNotFound', 'Not found');
  });

  function sendBytes(req: IncomingMessage, res: ServerResponse, bytes: Uint8Array, headers: Record<string, string>, cut: boolean): void {
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    let start = 0;
    let end = bytes.byteLength - 1;
    let status = 200;
    if (range) {
      start = Number(range[1]);
      end = range[2] ? Math.min(Number(range[2]), end) : end;
      if (start > end) {
        res.writeHead(416, { 'content-range': `bytes */${bytes.byteLength}` });
        return void res.end();
      }
      status = 206;
      headers['content-range'] = `bytes ${start}-${end}/${bytes.byteLength}`;
    }
    const body = bytes.subarray(start, end + 1);
    // A cut download is sent chunked, so that the client sees the stream end without its last
    // chunk (Node 24's fetch left a Content-Length body cut by a destroyed socket pending).
    const length: Record<string, string> = cut && req.method !== 'HEAD' ? {} : { 'content-length': String(body.byteLength) };
    res.writeHead(status, { ...headers, 'content-type': 'application/octet-stream', ...length });
    if (req.method === 'HEAD') return void res.end();
    if (cut) {
      res.write(body.subarray(0, Math.floor(body.byteLength / 2)), () => res.destroy());
      return;
    }
    res.end(body);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    cutNextDownload(path) {
      for (const spec of Object.values(repos)) if (spec.files[path]) cuts.add(sha256(spec.files[path]!));
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
