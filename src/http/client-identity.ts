/**
 * Who a request comes from, for the shares of resources clients take in turn (the worker
 * threads' queues: threads/worker-pool.ts). The home notes the address of the connection a
 * request arrived on (Node: the socket's peer address, which the client cannot forge by
 * header); the API key is not used: the server's keys are one operator's (several for
 * rotation), not one per client. Behind a reverse proxy every request shares the proxy's
 * address: the queues are then bounded but not per-client fair.
 */

import type { Context, MiddlewareHandler } from 'hono';

declare module 'hono' {
  interface ContextVariableMap {
    /** Who the request comes from (noteRequestClient), read before a middleware replaces the raw Request (hono/body-limit does). */
    client?: string;
  }
}

const clients = new WeakMap<Request, string>();

/** Characters of an address kept (an IPv6 address with a zone is under 64). */
const MAX_ADDRESS_CHARS = 64;

/** Records the address `request` arrived from (the home calls this before the app sees it). */
export function noteRequestClient(request: Request, address: string | undefined | null): void {
  if (typeof address !== 'string' || address === '') return;
  clients.set(request, address.slice(0, MAX_ADDRESS_CHARS));
}

/** Outermost: keeps the client the home noted for the request it was given (later middleware may wrap the Request anew). */
export function identifyClient(): MiddlewareHandler {
  return async (c, next) => {
    const client = clients.get(c.req.raw);
    if (client !== undefined) c.set('client', client);
    await next();
  };
}

/** The client a request comes from; undefined when the home gave none (workerd, the page). */
export function requestClient(c: Context): string | undefined {
  return c.get('client');
}
