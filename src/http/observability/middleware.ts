import { Hono, type MiddlewareHandler } from 'hono';
import { VERSION } from '../../common/version.js';
import { errorResponse, HttpError } from '../errors.js';
import type { RequestRecord, ServerActivity } from './activity.js';
import { PROMETHEUS_CONTENT_TYPE } from './prometheus.js';

declare module 'hono' {
  interface ContextVariableMap {
    /** The request's record (observeRequests): routes hand it to GenerationRun.start. */
    requestRecord?: RequestRecord;
  }
}

/**
 * Outermost: opens the request's record (so refusals by the checks after it are counted
 * and logged too), echoes its id as X-Request-Id, and while the server drains answers
 * new requests with a 503 that closes the connection.
 */
export function observeRequests(activity: ServerActivity): MiddlewareHandler {
  return async (c, next) => {
    const record = activity.begin(c.req.raw, c.req.path);
    c.set('requestRecord', record);
    try {
      if (activity.draining) {
        c.res = errorResponse(
          new HttpError(503, 'ServiceUnavailableError', 'The server is shutting down.', null, { connection: 'close', 'retry-after': '1' }),
        );
      } else {
        await next();
      }
    } finally {
      try {
        c.res.headers.set('x-request-id', record.id);
      } catch {
        // Immutable headers (a proxied response): the id is still in the log.
      }
      record.responded(c.res.status);
    }
  };
}

/** GET /metrics (Prometheus text) and GET /version, both open like /health. */
export function observabilityRoutes(activity: ServerActivity): Hono {
  const routes = new Hono();
  routes.get('/metrics', async () => new Response(await activity.metricsText(), { headers: { 'content-type': PROMETHEUS_CONTENT_TYPE } }));
  routes.get('/version', (c) => c.json({ version: VERSION }));
  return routes;
}
