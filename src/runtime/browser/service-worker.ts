/**
 * The playground's service worker (bundled by scripts/build-playground.ts into
 * dist/playground/service-worker.js, registered by the page once an in-page engine has
 * started). It keeps the page itself, its stylesheet and its scripts in a cache named after
 * the build, so a reload works when the server is gone; the in-page engine's big files
 * (.wasm, model) stay in the page's own cache (browser-cache.ts), which it revalidates itself.
 *
 * Only the playground's own files are answered here. API calls (/v1/*, /generate,
 * /health, …) and everything else go to the network untouched: a stale answer from an
 * API would be a lie, and a failed one is the truth when the server is gone.
 *
 * Strategy: network first (a rebuilt page is picked up at once; the server revalidates
 * with ETags, so it costs a round trip), the cached copy when the network fails. Every
 * response served from here carries the cross-origin-isolation headers, so the page stays
 * `crossOriginIsolated` (and onnxruntime keeps its threads) offline.
 */
import { CROSS_ORIGIN_ISOLATION, ENGINE_PATHS, shellCacheName, SHELL_CACHE_PREFIX } from '../playground-files.js';

/** Replaced at build time: the shell's files (relative to the scope) and a hash of their content. */
declare const __PLAYGROUND_SHELL__: { version: string; files: string[] };

interface ExtendableEvent extends Event {
  waitUntil(promise: Promise<unknown>): void;
}
interface FetchEvent extends ExtendableEvent {
  readonly request: Request;
  respondWith(response: Response | Promise<Response>): void;
}
interface ServiceWorkerScope {
  registration: { scope: string };
  skipWaiting(): Promise<void>;
  clients: { claim(): Promise<void> };
  addEventListener(type: 'install' | 'activate', listener: (event: ExtendableEvent) => void): void;
  addEventListener(type: 'fetch', listener: (event: FetchEvent) => void): void;
}

const worker = self as unknown as ServiceWorkerScope;
const SHELL = __PLAYGROUND_SHELL__;
const CACHE = shellCacheName(SHELL.version);
const scope = new URL(worker.registration.scope);
/** Cache keys: the page under its scope URL (index.html and query strings map to it). */
const shellUrls = new Set(SHELL.files.map((file) => new URL(file, scope).href));

/** The cache key of a playground file, or null for anything this worker must not answer. */
function shellKey(request: Request): string | null {
  if (request.method !== 'GET') return null;
  const url = new URL(request.url);
  if (url.origin !== scope.origin || !url.pathname.startsWith(scope.pathname)) return null;
  const path = url.pathname.slice(scope.pathname.length);
  if (path === '' || path === 'index.html') return request.mode === 'navigate' || request.destination === 'document' ? scope.href : null;
  // The engine's files are the page's own cache's business; the rest is not ours.
  if (ENGINE_PATHS.some((prefix) => path.startsWith(prefix))) return null;
  const key = `${url.origin}${url.pathname}`;
  return shellUrls.has(key) || path.startsWith('playground/chunks/') ? key : null;
}

function isolated(response: Response): Response {
  const headers = new Headers(response.headers);
  for (const [name, value] of Object.entries(CROSS_ORIGIN_ISOLATION)) headers.set(name, value);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

async function networkFirst(request: Request, key: string): Promise<Response> {
  try {
    const fresh = await fetch(request);
    // Only into a cache that exists: after "Clear cached files" this worker is unregistered
    // but still serves the open page, and must not fill a new cache behind the visitor's back.
    if (fresh.ok && (await caches.has(CACHE))) await (await caches.open(CACHE)).put(key, fresh.clone()).catch(() => {});
    return fresh;
  } catch (error) {
    const cached = (await caches.match(key, { cacheName: CACHE })) ?? (await matchAnyShell(key));
    if (!cached) throw error;
    return isolated(cached);
  }
}

/** A file of the page's previous build still cached while this build's precache could not finish. */
async function matchAnyShell(key: string): Promise<Response | undefined> {
  for (const name of await caches.keys()) {
    if (!name.startsWith(SHELL_CACHE_PREFIX)) continue;
    const found = await (await caches.open(name)).match(key);
    if (found) return found;
  }
  return undefined;
}

worker.addEventListener('install', (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      // Fresh from the server, not from the HTTP cache, so the copies match this build.
      await cache.addAll([...shellUrls].map((url) => new Request(url, { cache: 'reload' })));
      await worker.skipWaiting();
    })(),
  );
});

worker.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) if (name.startsWith(SHELL_CACHE_PREFIX) && name !== CACHE) await caches.delete(name);
      await worker.clients.claim();
    })(),
  );
});

worker.addEventListener('fetch', (event) => {
  const key = shellKey(event.request);
  if (key !== null) event.respondWith(networkFirst(event.request, key));
});
