/**
 * What the playground's homes (the Node server, the Worker, the page's service worker)
 * agree on: the headers that make the page cross-origin isolated, where the service
 * worker lives, and the names of the page's caches. No runtime APIs here: every home imports it.
 */

/**
 * The page is cross-origin isolated (COOP same-origin + COEP require-corp), which gives it
 * SharedArrayBuffer and so onnxruntime-web's WASM threads. Everything it loads is
 * same-origin, so nothing is blocked; CORP keeps other sites from embedding the files.
 */
export const CROSS_ORIGIN_ISOLATION: Readonly<Record<string, string>> = {
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-embedder-policy': 'require-corp',
  'cross-origin-resource-policy': 'same-origin',
};

/** The service worker's script, relative to the page; served with `Service-Worker-Allowed` so it may control the page above it. */
export const SERVICE_WORKER_PATH = 'playground/service-worker.js';

/** The page's files under the service worker, one cache per build (older ones deleted when a new build activates). */
export const SHELL_CACHE_PREFIX = 'edge-llm-playground-shell-';

export function shellCacheName(version: string): string {
  return `${SHELL_CACHE_PREFIX}${version}`;
}

/** The in-page engine's files (relative to the page): cached by the page itself (browser-cache.ts), not by the service worker. */
export const ENGINE_PATHS = ['playground/ort/', 'playground/model/'];

/** Sent with the service worker's script: relative to it, so the page's folder (wherever the page is mounted). */
export const SERVICE_WORKER_SCOPE_HEADER: Readonly<Record<string, string>> = { 'service-worker-allowed': '../' };

/**
 * Which build of onnxruntime's WebGPU backend the page's home serves: absent means
 * `asyncify` (`npm start`); the Worker's page says `<meta name="edge-llm-webgpu-build" content="jspi">`
 * (browser-ort.ts: the smaller build, which needs JavaScript Promise Integration).
 */
export const WEBGPU_BUILD_META = 'edge-llm-webgpu-build';

/** The page's GGUF build worker (browser-gguf-worker.ts), a script of the bundle in playground/. */
export const GGUF_WORKER_SCRIPT = 'gguf-worker.js';
