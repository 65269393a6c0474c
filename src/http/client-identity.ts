/**
 * Who a request comes from, for the shares of resources clients take in turn (the worker
 * threads' queues: threads/worker-pool.ts). The home notes the address of the connection a
 * request arrived on (Node: the socket's peer address, which the client cannot forge by
 * header); the API key is not used: the server's keys are one operator's (several for
 * rotation), not one per client. Behind a reverse proxy every request shares the proxy's
 * address: the queues are then bounded but not per-client fair.
 */

const clients = new WeakMap<Request, string>();

/** Characters of an address kept (an IPv6 address with a zone is under 64). */
const MAX_ADDRESS_CHARS = 64;

/** Records the address `request` arrived from (the home calls this before the app sees it). */
export function noteRequestClient(request: Request, address: string | undefined | null): void {
  if (typeof address !== 'string' || address === '') return;
  clients.set(request, address.slice(0, MAX_ADDRESS_CHARS));
}

/** The client `request` comes from; undefined when the home gave none (workerd, the page, tests calling app.fetch). */
export function requestClient(request: Request): string | undefined {
  return clients.get(request);
}
