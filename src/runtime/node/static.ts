/**
 * Serves the playground page under Node: `/` is the page, `/playground/*` its assets,
 * the onnxruntime-web .wasm files (from node_modules) and the model files the in-page
 * engine downloads. Everything comes from this machine: the page needs no CDN.
 *
 * Mount it on the API app (the API routes are matched first, so nothing is shadowed):
 *
 *   app.route('/', playgroundRoutes({ modelDir: config.modelDir }))
 *
 * Only listed files are served (no directory walking), so a path cannot reach outside.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { packageRoot } from './package-root.js';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Hono, type Context } from 'hono';
import { MODEL_FILE_PATHS } from '../../onnx/model-files.js';
import { errorBody } from '../../http/errors.js';
import { CROSS_ORIGIN_ISOLATION, SERVICE_WORKER_PATH, SERVICE_WORKER_SCOPE_HEADER } from '../playground-files.js';

export interface PlaygroundStaticOptions {
  /**
   * The model the in-page engine loads (relative paths from the working directory, like
   * MODEL_DIR); defaults to this repository's embedded models/stories260k.
   */
  modelDir?: string;
  /** The repository root holding public/ and dist/playground/; defaults to this file's. */
  rootDir?: string;
  /** The page's built script; defaults to dist/playground/ under rootDir. */
  bundleDir?: string;
}

const CONTENT_TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  map: 'application/json; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  json: 'application/json; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  // WebAssembly.instantiateStreaming requires exactly this type.
  wasm: 'application/wasm',
  onnx: 'application/octet-stream',
};

/** Files of public/ the page uses (the TypeScript sources there are bundled, not served). */
const PUBLIC_ASSET = /^[a-z0-9][a-z0-9-]*\.(css|svg|png)$/;
/** What the bundler writes: the entry, its chunks, source maps and licence notes. */
const BUNDLE_ASSET = /^(chunks\/)?[A-Za-z0-9_-][A-Za-z0-9_.-]*\.(js|js\.map|js\.LEGAL\.txt)$/;
/** The .wasm builds of onnxruntime-web the page's backends fetch. */
const ORT_WASM = /^ort-wasm-simd-threaded(\.asyncify)?\.wasm$/;
const MODEL_FILES = new Set<string>(Object.values(MODEL_FILE_PATHS));
/** Graph variants and their external data (engine/loading/model-variants.ts), which the in-page engine probes and fetches. */
const MODEL_GRAPH_FILE = /^(onnx\/)?[A-Za-z0-9_-][A-Za-z0-9_.-]*\.(onnx|onnx_data(_\d+)?|onnx\.data(_\d+)?)$/;

function contentType(path: string): string {
  const ext = path.slice(path.lastIndexOf('.') + 1).toLowerCase();
  return CONTENT_TYPES[ext] ?? 'application/octet-stream';
}

async function fileResponse(path: string, notFoundHint: string, ifNoneMatch: string | undefined, extraHeaders: Record<string, string> = {}): Promise<Response> {
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new Error('not a file');
    const headers = {
      'content-type': contentType(path),
      // Revalidate each time: a rebuilt bundle or a swapped model must never be stale.
      'cache-control': 'no-cache',
      etag: `W/"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`,
      'last-modified': info.mtime.toUTCString(),
      'x-content-type-options': 'nosniff',
      // The page is cross-origin isolated (threads for in-page WASM): playground-files.ts.
      ...CROSS_ORIGIN_ISOLATION,
      ...extraHeaders,
    };
    // The page's cache revalidates its copy of the .wasm and the model with this: unchanged
    // files cost one round trip, not megabytes.
    if (ifNoneMatch !== undefined && ifNoneMatch.split(/\s*,\s*/).includes(headers.etag)) return new Response(null, { status: 304, headers });
    // Streamed: the .wasm is 14 MB and a served model may be far larger.
    const body = Readable.toWeb(createReadStream(path)) as unknown as ReadableStream<Uint8Array>;
    return new Response(body, { headers: { ...headers, 'content-length': String(info.size) } });
  } catch {
    return notFound(notFoundHint);
  }
}

/** The API's error body, so the page and curl users see the same shape everywhere. */
function notFound(what: string): Response {
  return Response.json(errorBody(404, 'NotFoundError', `Not found: ${what}`), { status: 404 });
}

/** Where onnxruntime-web's dist/ folder is, as Node resolves the package from here. */
function ortDistDir(): string {
  const require = createRequire(import.meta.url);
  return dirname(require.resolve('onnxruntime-web/ort-wasm-simd-threaded.wasm'));
}

export function playgroundRoutes(options: PlaygroundStaticOptions = {}): Hono {
  const root = resolve(options.rootDir ?? packageRoot(import.meta.url));
  const publicDir = join(root, 'public');
  const bundleDir = options.bundleDir !== undefined ? resolve(options.bundleDir) : join(root, 'dist', 'playground');
  // Relative to the working directory, as createNodeEngine reads it: the page gets the served model.
  const modelDir = options.modelDir !== undefined ? resolve(options.modelDir) : join(root, 'models', 'stories260k');
  let ortDir: string | undefined;

  const routes = new Hono();
  const page = (c: Context) => fileResponse(join(publicDir, 'index.html'), 'public/index.html', c.req.header('if-none-match'));
  routes.get('/', page);
  routes.get('/index.html', page);

  routes.get('/playground/ort/:file', (c) => {
    const file = c.req.param('file');
    if (!ORT_WASM.test(file)) return notFound(c.req.path);
    ortDir ??= ortDistDir();
    return fileResponse(join(ortDir, file), c.req.path, c.req.header('if-none-match'));
  });

  routes.get('/playground/model/*', (c) => {
    const file = c.req.path.slice('/playground/model/'.length);
    if (!MODEL_FILES.has(file) && !MODEL_GRAPH_FILE.test(file)) return notFound(c.req.path);
    return fileResponse(join(modelDir, file), c.req.path, c.req.header('if-none-match'));
  });

  routes.get('/playground/*', (c) => {
    const file = c.req.path.slice('/playground/'.length);
    if (PUBLIC_ASSET.test(file)) return fileResponse(join(publicDir, file), c.req.path, c.req.header('if-none-match'));
    if (BUNDLE_ASSET.test(file)) {
      return fileResponse(
        join(bundleDir, file),
        `${c.req.path} (run \`npm run build:playground\` to build the page's script)`,
        c.req.header('if-none-match'),
        // The service worker sits under playground/ but controls the page one level up.
        `playground/${file}` === SERVICE_WORKER_PATH ? SERVICE_WORKER_SCOPE_HEADER : {},
      );
    }
    return notFound(c.req.path);
  });

  return routes;
}
