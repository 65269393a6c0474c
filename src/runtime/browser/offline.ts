/**
 * The page's side of its service worker (browser-service-worker.ts): registered once an
 * in-page engine has started (that is when a reload without the server makes sense), kept
 * up to date on later visits, and removed with its caches by "Clear cached files".
 */
import { SERVICE_WORKER_PATH, SHELL_CACHE_PREFIX } from '../playground-files.js';

function serviceWorkers(): ServiceWorkerContainer | undefined {
  // Absent outside secure contexts and in some private modes; then the page simply needs its server.
  return typeof navigator === 'undefined' ? undefined : navigator.serviceWorker;
}

function scriptUrl(): string {
  return new URL(SERVICE_WORKER_PATH, document.baseURI).href;
}

function isOurs(registration: ServiceWorkerRegistration): boolean {
  const worker = registration.active ?? registration.waiting ?? registration.installing;
  return worker?.scriptURL === scriptUrl();
}

/**
 * Registers the service worker for the page's folder and resolves once it is active (its
 * copy of the page is complete). A failure only costs offline reloads: it is returned, not thrown.
 */
export async function keepPageOffline(): Promise<Error | null> {
  const container = serviceWorkers();
  if (!container) return new Error('this browser has no service workers here');
  try {
    await container.register(scriptUrl(), { scope: new URL('./', document.baseURI).pathname });
    await container.ready;
    return null;
  } catch (error) {
    return error as Error;
  }
}

/** Whether the page itself is kept for offline reloads (a copy of it in a shell cache). */
export async function pageKeptOffline(): Promise<boolean> {
  if (typeof caches === 'undefined') return false;
  return (await caches.keys()).some((name) => name.startsWith(SHELL_CACHE_PREFIX));
}

/** Unregisters the service worker and deletes its caches: the next load needs the server again. */
export async function forgetOfflinePage(): Promise<void> {
  const container = serviceWorkers();
  if (container) {
    for (const registration of await container.getRegistrations().catch(() => [])) if (isOurs(registration)) await registration.unregister();
  }
  if (typeof caches === 'undefined') return;
  for (const name of await caches.keys()) if (name.startsWith(SHELL_CACHE_PREFIX)) await caches.delete(name);
}
