import { Hono } from 'hono';

/** GET /health: 200 with an empty body while the server is up, as vLLM answers it. */
export function healthRoutes(): Hono {
  const routes = new Hono();
  routes.get('/health', (c) => c.body(null, 200));
  return routes;
}
