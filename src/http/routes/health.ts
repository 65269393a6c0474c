import { Hono } from 'hono';
import { errorResponse, HttpError } from '../errors.js';
import type { ServingContext } from '../serving/context.js';

/**
 * GET /health: 200 with an empty body while the server is up, as vLLM answers it; 503 with
 * the reason while a component requests depend on is broken (the model's worker thread
 * after it died; structured output's grammar engine after a trap, until its replacement is up), so a load balancer stops sending traffic.
 */
export function healthRoutes(ctx?: Pick<ServingContext, 'guideCompiler' | 'engine'>): Hono {
  const routes = new Hono();
  routes.get('/health', (c) => {
    const broken = ctx?.engine.brokenReason?.() ?? ctx?.guideCompiler?.brokenReason?.() ?? null;
    if (broken !== null) return errorResponse(new HttpError(503, 'ServiceUnavailableError', `Unhealthy: ${broken}.`));
    return c.body(null, 200);
  });
  return routes;
}
