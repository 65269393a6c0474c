/**
 * The browser peers' pages for `npm run bench:browser`, mounted on the bench's page server:
 * /peers/wllama/ (wllama on the stories260K GGUF the llama.cpp peer runs, bench/size.ts) and /peers/transformers/ (transformers.js
 * on the embedded ONNX folder). Every response carries the playground's cross-origin
 * isolation headers, so both peers may start WASM threads, as the in-page engine does.
 * The pages are bundled from the npm packages at startup (esbuild); nothing is fetched
 * from outside this server.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { Hono } from 'hono';
import { CROSS_ORIGIN_ISOLATION } from '../../src/runtime/playground-files.js';
import { stories260kGguf } from '../size.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
export const PEER_MODEL_DIR = join(root, 'models/stories260k');

/** transformers.js pins its own onnxruntime-web (nested) unless npm could share ours. */
export function transformersOrtDist(): string {
  const nested = join(root, 'node_modules/@huggingface/transformers/node_modules/onnxruntime-web/dist');
  return existsSync(nested) ? nested : join(root, 'node_modules/onnxruntime-web/dist');
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
};

const PAGE_HTML = '<!doctype html><meta charset="utf-8"><title>bench peer</title><script type="module" src="./page.js"></script>';

async function bundle(entry: string): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL(entry, import.meta.url))],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'error',
  });
  return result.outputFiles[0]!.text;
}

function respond(body: string | Uint8Array, path: string): Response {
  const headers = { ...CROSS_ORIGIN_ISOLATION, 'content-type': CONTENT_TYPES[extname(path)] ?? 'application/octet-stream', 'cache-control': 'no-store' };
  // readFile's Buffers are backed by an ArrayBuffer, as Response's typing wants.
  return new Response(body as string | Uint8Array<ArrayBuffer>, { headers });
}

/** A file under `dir`, or null when the path leaves it or the file is missing. */
async function fileUnder(dir: string, relative: string): Promise<Uint8Array | null> {
  const path = normalize(join(dir, relative));
  if (!path.startsWith(dir)) return null;
  return readFile(path).catch(() => null);
}

export async function peerRoutes(): Promise<Hono> {
  const gguf = await stories260kGguf('F32');
  const [wllamaPage, transformersPage] = await Promise.all([bundle('./wllama-page.ts'), bundle('./transformers-page.ts')]);
  const wllamaWasm = join(root, 'node_modules/@wllama/wllama/esm/wasm');
  const ortDist = transformersOrtDist();
  const app = new Hono();
  app.get('/:peer/:rest{.*}', async (c) => {
    const peer = c.req.param('peer');
    const rest = c.req.param('rest');
    if (peer !== 'wllama' && peer !== 'transformers') return c.notFound();
    if (rest === '' || rest === 'index.html') return respond(PAGE_HTML, 'index.html');
    if (rest === 'page.js') return respond(peer === 'wllama' ? wllamaPage : transformersPage, rest);
    let body: Uint8Array | null = null;
    if (peer === 'wllama') {
      body = rest === 'model.gguf' ? await readFile(gguf) : await fileUnder(wllamaWasm, rest);
    } else if (rest.startsWith('ort/')) {
      body = await fileUnder(ortDist, rest.slice('ort/'.length));
    } else if (rest.startsWith('models/stories260k/')) {
      body = await fileUnder(PEER_MODEL_DIR, rest.slice('models/stories260k/'.length));
    }
    return body === null ? c.notFound() : respond(body, rest);
  });
  return app;
}
