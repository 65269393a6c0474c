import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import type { ServerConfig } from '../config/server-config.js';

/** What "*" in the allowed methods stands for (Starlette's list, which vLLM's server uses). */
const ALL_METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'];

/**
 * CORS for browser pages on other origins, as vLLM configures it (--allowed-origins,
 * --allowed-methods, --allowed-headers, --allow-credentials; everything allowed by
 * default). A preflight OPTIONS is answered with 204 on every path, before routing.
 * "*" for origins with credentials echoes the page's origin, since browsers refuse a
 * credentialed response that allows "*".
 */
export function corsMiddleware(config: Pick<ServerConfig, 'corsAllowedOrigins' | 'corsAllowedMethods' | 'corsAllowedHeaders' | 'corsAllowCredentials'>): MiddlewareHandler {
  const anyOrigin = config.corsAllowedOrigins.includes('*');
  const origins = new Set(config.corsAllowedOrigins);
  return cors({
    origin: anyOrigin && !config.corsAllowCredentials ? '*' : (origin) => (anyOrigin || origins.has(origin) ? origin : null),
    allowMethods: config.corsAllowedMethods.includes('*') ? ALL_METHODS : config.corsAllowedMethods.map((method) => method.toUpperCase()),
    // Empty: the preflight's Access-Control-Request-Headers are echoed, i.e. any header is allowed.
    allowHeaders: config.corsAllowedHeaders.includes('*') ? [] : config.corsAllowedHeaders,
    credentials: config.corsAllowCredentials,
  });
}
