/**
 * Fetches a Hugging Face model into the Hugging Face cache, laid out as huggingface_hub
 * (huggingface-cli, transformers) and llama.cpp's `-hf` keep it, so what either fetched is
 * reused here and the other way round:
 *
 *   $HF_HUB_CACHE (else $HF_HOME/hub, else ~/.cache/huggingface/hub)
 *     models--owner--repo/
 *       refs/main                      the commit the revision pointed at
 *       blobs/<etag>                   each file's bytes, named by its LFS sha256 or git blob id
 *       snapshots/<commit>/<path>      relative symlinks to the blobs
 *
 * The repo's commit and file list come from @huggingface/hub (modelInfo, listFiles). The
 * download of each file is written here, because the library's downloadFileToCacheDir does
 * not do what a server start needs: it names the snapshot folder by each file's last commit
 * (so one model's files land in different folders), writes no refs/<revision> (so an offline
 * start cannot find the snapshot), does not resume an interrupted download and reports no
 * progress. This follows huggingface_hub's hf_hub_download instead: a HEAD on `resolve`
 * gives X-Repo-Commit, the ETag (X-Linked-Etag for LFS files) and the size (X-Linked-Size);
 * the bytes come from the redirect's target; a `<blob>.incomplete` is resumed with a Range.
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { lstat, mkdir, readdir, readFile, rename, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { listFiles, modelInfo } from '@huggingface/hub';
import type { OnnxFileSettings } from '../../../engine/loading/model-variants.js';
import { formatHubModelRef, type HubModelRef } from './model-ref.js';
import { pickRepoFiles } from './pick-files.js';

export interface HubSettings {
  /** HF_ENDPOINT (default https://huggingface.co). */
  endpoint: string;
  /** HF_TOKEN. */
  token?: string;
  /** HF_HUB_OFFLINE: use the cache only. */
  offline: boolean;
  /** The cache folder (hub/, where models--owner--repo live). */
  cacheDir: string;
}

/** The Hub settings of an environment, by huggingface_hub's variable names. */
export function hubSettingsFromEnv(env: Record<string, string | undefined>): HubSettings {
  const set = (name: string) => (env[name] !== undefined && env[name]!.trim() !== '' ? env[name]!.trim() : undefined);
  const home = set('HF_HOME') ?? join(set('XDG_CACHE_HOME') ?? join(homedir(), '.cache'), 'huggingface');
  return {
    endpoint: (set('HF_ENDPOINT') ?? 'https://huggingface.co').replace(/\/+$/, ''),
    token: set('HF_TOKEN') ?? set('HUGGING_FACE_HUB_TOKEN'),
    offline: /^(1|true|yes|on)$/i.test(set('HF_HUB_OFFLINE') ?? ''),
    cacheDir: set('HF_HUB_CACHE') ?? join(home, 'hub'),
  };
}

/** Progress of one file: bytes so far of its size (resumed bytes included). */
export type DownloadProgress = (event: { file: string; received: number; total: number; done: boolean; cached: boolean }) => void;

export interface ResolveOptions extends OnnxFileSettings {
  revision?: string;
  onProgress?: DownloadProgress;
  /** Test seam for the transport; the global fetch otherwise. */
  fetch?: typeof fetch;
}

/** A user-facing failure of the Hub, one line naming the repo. */
export class HubError extends Error {}

const COMMIT = /^[0-9a-f]{40}$/;

const repoFolder = (settings: HubSettings, repo: string) => join(settings.cacheDir, `models--${repo.split('/').join('--')}`);

/** Where the served model is: a snapshot folder, or the .gguf file inside it. */
export interface ResolvedModel {
  path: string;
  commit: string;
  files: string[];
  downloadedBytes: number;
}

/** Fetches (or finds in the cache, offline) the files `ref` needs; returns the path to serve. */
export async function resolveHubModel(ref: HubModelRef, settings: HubSettings, options: ResolveOptions = {}): Promise<ResolvedModel> {
  const revision = options.revision ?? 'main';
  if (settings.offline) return fromCache(ref, settings, revision, options);
  const doFetch = options.fetch ?? fetch;
  const credentials = settings.token ? { accessToken: settings.token } : {};
  let commit: string;
  let listing: string[];
  try {
    const info = await modelInfo({ name: ref.repo, revision, hubUrl: settings.endpoint, fetch: doFetch, additionalFields: ['sha'], ...credentials });
    commit = (info as { sha?: string }).sha ?? revision;
    listing = [];
    for await (const entry of listFiles({ repo: { type: 'model', name: ref.repo }, revision: commit, recursive: true, hubUrl: settings.endpoint, fetch: doFetch, ...credentials })) {
      if (entry.type === 'file') listing.push(entry.path);
    }
  } catch (error) {
    throw hubError(error, ref, revision, settings);
  }
  const picked = pickOrExplain(ref, listing, options);
  const folder = repoFolder(settings, ref.repo);
  let downloadedBytes = 0;
  for (const file of picked.files) {
    downloadedBytes += await downloadToCache({ repo: ref.repo, file, commit, folder, settings, fetch: doFetch, onProgress: options.onProgress, ref });
  }
  // refs/<revision> → the commit, so an offline start finds this snapshot (huggingface_hub writes it too).
  if (!COMMIT.test(revision)) {
    await mkdir(join(folder, 'refs', dirname(revision)), { recursive: true });
    await writeFile(join(folder, 'refs', revision), commit);
  }
  const snapshot = join(folder, 'snapshots', commit);
  return { path: picked.gguf ? join(snapshot, picked.gguf) : snapshot, commit, files: picked.files, downloadedBytes };
}

function pickOrExplain(ref: HubModelRef, listing: string[], options: OnnxFileSettings) {
  try {
    return pickRepoFiles(ref, listing, options);
  } catch (error) {
    throw new HubError((error as Error).message);
  }
}

/** Offline: the snapshot refs/<revision> points at, and the files the settings need in it. */
async function fromCache(ref: HubModelRef, settings: HubSettings, revision: string, options: OnnxFileSettings): Promise<ResolvedModel> {
  const folder = repoFolder(settings, ref.repo);
  const notDownloaded = (why: string) =>
    new HubError(
      `The model ${formatHubModelRef(ref)} was not downloaded: HF_HUB_OFFLINE is set and ${why} (run \`edge-llm pull ${formatHubModelRef(ref)}\` while online).`,
    );
  let commit = revision;
  if (!COMMIT.test(revision)) {
    try {
      commit = (await readFile(join(folder, 'refs', revision), 'utf8')).trim();
    } catch {
      throw notDownloaded(`the Hugging Face cache (${settings.cacheDir}) holds no ${revision} of it`);
    }
  }
  const snapshot = join(folder, 'snapshots', commit);
  const listing = await listTree(snapshot).catch(() => null);
  if (listing === null) throw notDownloaded(`the Hugging Face cache (${settings.cacheDir}) holds no snapshot ${commit} of it`);
  let picked;
  try {
    picked = pickRepoFiles(ref, listing, options);
  } catch (error) {
    throw notDownloaded(`the cached snapshot lacks what these settings need: ${(error as Error).message}`);
  }
  return { path: picked.gguf ? join(snapshot, picked.gguf) : snapshot, commit, files: picked.files, downloadedBytes: 0 };
}

/** Files under a folder, as repo paths ("onnx/model.onnx"); symlinks to blobs count as files. */
async function listTree(root: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(join(root, prefix), { withFileTypes: true })) {
    const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await listTree(root, path)));
    else out.push(path);
  }
  return out;
}

/** The one-line message for a failed Hub call. */
function hubError(error: unknown, ref: HubModelRef, revision: string, settings: HubSettings): HubError {
  if (error instanceof HubError) return error;
  const status = (error as { statusCode?: number }).statusCode;
  const name = formatHubModelRef(ref);
  // The Hub answers an anonymous caller 401 "Repository not found" for a missing repo (it might be
  // private); the library keeps the body but not the X-Error-Code header, so the body tells them apart.
  const body = (error as { data?: { error?: string; message?: string } }).data;
  const missing = /repository not found/i.test(body?.error ?? body?.message ?? '');
  if ((status === 401 || status === 403) && !missing) {
    return new HubError(
      settings.token
        ? `The Hugging Face repo ${ref.repo} is gated or private and HF_TOKEN has no access to it (accept its terms on its page with that account).`
        : `The Hugging Face repo ${ref.repo} is gated or private: set HF_TOKEN to a token with access (and accept its terms on its page).`,
    );
  }
  if (status === 404 || missing) {
    const code = body?.error ?? '';
    if (/rev/i.test(code)) return new HubError(`The Hugging Face repo ${ref.repo} has no revision "${revision}".`);
    return new HubError(`The Hugging Face repo ${ref.repo} does not exist (or is private: set HF_TOKEN) at ${settings.endpoint}.`);
  }
  const cause = (error as Error).message.split('. URL:')[0];
  return new HubError(`Cannot fetch ${name} from ${settings.endpoint}: ${cause}`);
}

/** An ETag as huggingface_hub keeps it: no weak prefix, no quotes. */
const normalizeEtag = (etag: string) => etag.replace(/^W\//, '').replace(/^"|"$/g, '');

interface FileDownload {
  repo: string;
  ref: HubModelRef;
  file: string;
  commit: string;
  folder: string;
  settings: HubSettings;
  fetch: typeof fetch;
  onProgress?: DownloadProgress;
}

const exists = (path: string) =>
  lstat(path).then(
    () => true,
    () => false,
  );

/** One file into blobs/ and its snapshot link; returns the bytes fetched now. */
async function downloadToCache(job: FileDownload): Promise<number> {
  const pointer = join(job.folder, 'snapshots', job.commit, job.file);
  if (await exists(pointer)) {
    job.onProgress?.({ file: job.file, received: 0, total: 0, done: true, cached: true });
    return 0;
  }
  const url = `${job.settings.endpoint}/${job.repo}/resolve/${job.commit}/${job.file.split('/').map(encodeURIComponent).join('/')}`;
  const auth: Record<string, string> = job.settings.token ? { authorization: `Bearer ${job.settings.token}` } : {};
  // The HEAD is not followed: an LFS file's ETag and size are on the Hub's own answer (X-Linked-*), not the CDN's.
  const head = await job.fetch(url, { method: 'HEAD', redirect: 'manual', headers: { ...auth, 'accept-encoding': 'identity' } });
  // Nothing of a HEAD's body is read; released at once so its connection is not left to the collector.
  await head.body?.cancel().catch(() => {});
  if (head.status >= 400) throw hubError({ statusCode: head.status, message: `HTTP ${head.status} for ${job.file}` }, job.ref, job.commit, job.settings);
  const etagHeader = head.headers.get('x-linked-etag') ?? head.headers.get('etag');
  if (etagHeader === null) throw new HubError(`Cannot fetch ${job.file} of ${job.repo}: the Hub sent no ETag for it.`);
  const etag = normalizeEtag(etagHeader);
  const total = Number(head.headers.get('x-linked-size') ?? head.headers.get('content-length') ?? NaN);
  const blob = join(job.folder, 'blobs', etag);
  await mkdir(dirname(blob), { recursive: true });
  await mkdir(dirname(pointer), { recursive: true });
  let fetched = 0;
  if (!(await exists(blob))) {
    const location = head.status >= 300 && head.status < 400 ? new URL(head.headers.get('location')!, url).href : url;
    fetched = await fetchResumable(location, `${blob}.incomplete`, total, auth, job);
    await rename(`${blob}.incomplete`, blob);
  }
  // A relative link, as huggingface_hub makes it, so the cache folder can move.
  await unlink(pointer).catch(() => {});
  await symlink(relative(dirname(pointer), blob), pointer);
  job.onProgress?.({ file: job.file, received: total, total, done: true, cached: fetched === 0 });
  return fetched;
}

/** GET into `partial`, resuming what it holds with a Range; returns the bytes fetched now. */
async function fetchResumable(url: string, partial: string, total: number, auth: Record<string, string>, job: FileDownload): Promise<number> {
  const have = await stat(partial).then(
    (s) => s.size,
    () => 0,
  );
  // Credentials go to the Hub only, not to the storage a large file redirects to.
  const sameHost = new URL(url).host === new URL(job.settings.endpoint).host;
  const headers: Record<string, string> = { ...(sameHost ? auth : {}), 'accept-encoding': 'identity' };
  if (have > 0) headers.range = `bytes=${have}-`;
  const response = await job.fetch(url, { headers });
  if (response.status === 416 && have === total) {
    await response.body?.cancel().catch(() => {});
    return 0;
  }
  if (!response.ok || response.body === null) {
    await response.body?.cancel().catch(() => {});
    throw new HubError(`Cannot fetch ${job.file} of ${job.repo}: HTTP ${response.status}.`);
  }
  const resumed = response.status === 206 ? have : 0;
  let received = resumed;
  let lastReport = 0;
  const counted = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>);
  counted.on('data', (chunk: Buffer) => {
    received += chunk.byteLength;
    const now = performance.now();
    if (now - lastReport > 250) {
      lastReport = now;
      job.onProgress?.({ file: job.file, received, total, done: false, cached: false });
    }
  });
  const sink = createWriteStream(partial, { flags: resumed > 0 ? 'a' : 'w' });
  try {
    await pipeline(counted, sink);
  } catch (error) {
    // What was written stays for the next run to resume from: let the file settle first.
    if (!sink.closed) await once(sink, 'close');
    throw new HubError(`Cannot fetch ${job.file} of ${job.repo}: the download was cut at ${received} of ${total} bytes (${(error as Error).message}); run again to resume.`);
  }
  if (Number.isFinite(total) && received !== total) {
    throw new HubError(`Cannot fetch ${job.file} of ${job.repo}: got ${received} of ${total} bytes (run again to resume).`);
  }
  return received - resumed;
}
