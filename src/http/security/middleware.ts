/**
 * The checks a public endpoint makes before any route runs: the Host header (against DNS
 * rebinding), the API key (vLLM's --api-key) and the JSON content type (a browser can
 * send a cross-site POST without a CORS preflight only as text/plain, a form or with no
 * type at all, so refusing those keeps other sites' pages from driving the API).
 * Refusals use the API's error shape (errors.ts).
 */
import type { MiddlewareHandler } from 'hono';
import { errorResponse, HttpError } from '../errors.js';
import { hostAllowed, hostName } from './allowed-hosts.js';
import { apiKeyChecker, bearerToken, type ApiKeyChecker } from './api-key.js';

/** The routes behind the API key, as vLLM guards /v1 (plus the other inference routes). /health, /metrics, /version and the playground stay open. */
export function isApiPath(path: string): boolean {
  return path === '/v1' || path.startsWith('/v1/') || path === '/generate' || path === '/tokenize' || path === '/detokenize';
}

function preview(text: string): string {
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}

export function hostCheck(allowed: readonly string[]): MiddlewareHandler {
  return async (c, next) => {
    // Under Node the URL's host is built from the Host header; elsewhere the URL is what the request names.
    const header = c.req.header('host') ?? new URL(c.req.url).host;
    if (!hostAllowed(header, allowed)) {
      return errorResponse(
        new HttpError(
          403,
          'ForbiddenError',
          `This server does not answer to the host "${preview(hostName(header ?? ''))}": it is not in allowedHosts (names a server answers to are checked against DNS rebinding).`,
        ),
      );
    }
    await next();
  };
}

const UNAUTHORIZED = () =>
  new HttpError(401, 'UnauthorizedError', 'Missing or invalid API key: send it as "Authorization: Bearer <key>".', null, {
    'www-authenticate': 'Bearer',
  });

/** null when the request's bearer token is one of the keys; otherwise the 401 to send. */
export async function refuseUnauthorized(request: Request, checker: ApiKeyChecker): Promise<Response | null> {
  const token = bearerToken(request.headers.get('authorization'));
  if (token !== null && (await checker.matches(token))) return null;
  return errorResponse(UNAUTHORIZED());
}

export function apiKeyAuth(keys: readonly string[]): MiddlewareHandler {
  const checker = apiKeyChecker(keys);
  return async (c, next) => {
    // c.req.path is the path as the router matches it (percent-decoded: /%761/completions
    // reaches /v1/completions), so the check sees what the routes see. CORS preflights
    // carry no credentials by design.
    if (c.req.method !== 'OPTIONS' && isApiPath(c.req.path)) {
      const refused = await refuseUnauthorized(c.req.raw, checker);
      if (refused !== null) return refused;
    }
    await next();
  };
}

/** application/json and the +json family, as FastAPI reads them. */
export function isJsonContentType(contentType: string | null | undefined): boolean {
  if (contentType === null || contentType === undefined) return false;
  const mediaType = contentType.split(';')[0]!.trim().toLowerCase();
  return mediaType === 'application/json' || (mediaType.startsWith('application/') && mediaType.endsWith('+json'));
}

/** The routes that take a JSON body (other paths get their 404 or 405 first). */
const JSON_BODY_ROUTES: ReadonlySet<string> = new Set(['/generate', '/v1/completions', '/v1/chat/completions', '/tokenize', '/detokenize']);

export function jsonContentTypeRequired(): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method === 'POST' && JSON_BODY_ROUTES.has(c.req.path)) {
      const contentType = c.req.header('content-type');
      if (!isJsonContentType(contentType)) {
        const got = contentType === undefined || contentType.trim() === '' ? 'no Content-Type' : `Content-Type: ${preview(contentType)}`;
        return errorResponse(
          new HttpError(415, 'UnsupportedMediaTypeError', `Expected a JSON request body with Content-Type: application/json, got ${got}.`),
        );
      }
    }
    await next();
  };
}
