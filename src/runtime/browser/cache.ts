/**
 * The in-page engine's big files (onnxruntime's .wasm, the model) kept in Cache Storage,
 * so a reload starts the engine without downloading them again, and without a network
 * at all. A cached copy is revalidated with its ETag (one round trip, 304 when unchanged),
 * so a rebuilt bundle or a swapped model is picked up; when the server cannot be reached
 * the cached copy is used as it is.
 */

export const PLAYGROUND_CACHE = 'edge-llm-playground-v1';

/** Set on responses read from the cache (for the "from cache" in the progress line). */
export const FROM_CACHE_HEADER = 'x-edge-llm-from-cache';

function cacheStorage(): CacheStorage | undefined {
  // Absent outside secure contexts (http:// other than localhost) and in some private modes.
  return typeof caches === 'undefined' ? undefined : caches;
}

function fromCache(cached: Response): Response {
  const headers = new Headers(cached.headers);
  headers.set(FROM_CACHE_HEADER, '1');
  return new Response(cached.body, { status: cached.status, statusText: cached.statusText, headers });
}

/**
 * A fetch for GET requests of the engine's files that reads and fills the cache. Without
 * Cache Storage it is the plain fetch.
 */
export function cachingFetch(cacheName = PLAYGROUND_CACHE, fetchFn: typeof fetch = globalThis.fetch.bind(globalThis)): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const storage = cacheStorage();
    const method = init?.method ?? 'GET';
    if (!storage || (method !== 'GET' && method !== 'HEAD')) return fetchFn(input, init);
    const url = String(input instanceof Request ? input.url : input);
    // HEAD (the model's variant probe) goes to the network; offline, a cached GET answers it.
    if (method === 'HEAD') {
      try {
        return await fetchFn(input, init);
      } catch (error) {
        const cached = await storage.open(cacheName).then((cache) => cache.match(url)).catch(() => undefined);
        if (!cached) throw error;
        return new Response(null, { status: cached.status, headers: cached.headers });
      }
    }
    let cache: Cache;
    try {
      cache = await storage.open(cacheName);
    } catch {
      return fetchFn(input, init); // Storage refused (quota, private mode): work uncached.
    }
    const cached = await cache.match(url);
    if (cached) {
      const etag = cached.headers.get('etag');
      let fresh: Response;
      try {
        fresh = await fetchFn(url, { ...init, headers: etag ? { 'if-none-match': etag } : {} });
      } catch {
        return fromCache(cached); // Offline, or the server is gone.
      }
      if (fresh.status === 304) return fromCache(cached);
      if (fresh.status >= 500) return fromCache(cached);
      if (fresh.status === 404 && cached.status === 404) return fresh;
      if (!fresh.ok) {
        await cache.delete(url); // The server no longer has it: do not serve a ghost later.
        return fresh;
      }
      return store(cache, url, fresh);
    }
    const response = await fetchFn(url, init);
    // A 404 is remembered too: optional files (chat_template.jinja, generation_config.json)
    // must read as absent on an offline reload, not as a failed download.
    return response.ok || response.status === 404 ? store(cache, url, response) : response;
  }) as typeof fetch;
}

/** Stores still being written, so the cache's size is read after them. */
const pendingStores = new Set<Promise<void>>();

async function store(cache: Cache, url: string, response: Response): Promise<Response> {
  // Stored while the caller reads its copy; a failed store (quota) only costs the cache.
  const stored = cache.put(url, response.clone()).catch(() => {});
  pendingStores.add(stored);
  void stored.finally(() => pendingStores.delete(stored));
  return response;
}

/** Bytes the cache holds (from its responses' lengths), and how many files. */
export async function cachedBytes(cacheName = PLAYGROUND_CACHE): Promise<{ files: number; bytes: number }> {
  await Promise.all(pendingStores);
  const storage = cacheStorage();
  if (!storage || !(await storage.has(cacheName))) return { files: 0, bytes: 0 };
  const cache = await storage.open(cacheName);
  let bytes = 0;
  let files = 0;
  for (const request of await cache.keys()) {
    const response = await cache.match(request);
    // A remembered 404 (an optional file the model does not have) is no file of the model's.
    if (response === undefined || response.status === 404) continue;
    files++;
    bytes += Number(response.headers.get('content-length') ?? 0) || 0;
  }
  return { files, bytes };
}

export async function clearCache(cacheName = PLAYGROUND_CACHE): Promise<void> {
  await Promise.all(pendingStores);
  await cacheStorage()?.delete(cacheName);
}
