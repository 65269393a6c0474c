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

/**
 * The routes behind the API key, as vLLM guards /v1 (plus the other inference routes), and
 * the served model's own files the playground's in-page engine reads (weights, tokenizer,
 * config: with a key set they are the operator's, issue 41). /health, /metrics, /version and
 * the playground page itself stay open.
 */
export function isApiPath(path: string): boolean {
  return (
    path === '/v1' ||
    path.startsWith('/v1/') ||
    path === '/generate' ||
    path === '/tokenize' ||
    path === '/detokenize' ||
    isModelFilePath(path)
  );
}

/** The playground's copy of the served model's files (the Node home serves them from the model folder). */
export function isModelFilePath(path: string): boolean {
  // Case-folded and with repeated slashes collapsed: a router or file system that is lenient about either must not open a way round the key.
  const normal = path.replace(/\/+/g, '/').toLowerCase();
  return normal === '/playground/model' || normal.startsWith('/playground/model/');
}

function preview(text: string): string {
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}

/** null when the request's Host is allowed; otherwise the 403 to send. */
export function refuseHost(request: Request, allowed: readonly string[]): Response | null {
  // Under Node the URL's host is built from the Host header; elsewhere the URL is what the request names.
  const header = request.headers.get('host') ?? new URL(request.url).host;
  if (hostAllowed(header, allowed)) return null;
  return errorResponse(
    new HttpError(
      403,
      'ForbiddenError',
      `This server does not answer to the host "${preview(hostName(header))}": it is not in allowedHosts (names a server answers to are checked against DNS rebinding).`,
    ),
  );
}

export function hostCheck(allowed: readonly string[]): MiddlewareHandler {
  return async (c, next) => {
    const refused = refuseHost(c.req.raw, allowed);
    if (refused !== null) return refused;
    await next();
  };
}

const UNAUTHORIZED = () =>
  new HttpError(401, 'UnauthorizedError', 'Missing or invalid API key: send it as "Authorization: Bearer <key>" (on /v1/messages also "x-api-key: <key>").', null, {
    'www-authenticate': 'Bearer',
  });

/** Anthropic's routes, whose clients send the key as `x-api-key`. */
export function isAnthropicPath(path: string): boolean {
  return path === '/v1/messages' || path.startsWith('/v1/messages/');
}

/**
 * The key a request presents: its bearer token, or on Anthropic's routes without an
 * Authorization header, the `x-api-key` header Anthropic's clients send (llama.cpp's
 * server reads both). Other routes keep OpenAI's one way, so a key in an unexpected
 * header is refused there as before.
 */
export function presentedApiKey(headers: Headers, path: string): string | null {
  const authorization = headers.get('authorization');
  if (authorization !== null || !isAnthropicPath(path)) return bearerToken(authorization);
  const key = headers.get('x-api-key')?.trim();
  return key === undefined || key === '' ? null : key;
}

/** null when the request's bearer token (or x-api-key) is one of the keys; otherwise the 401 to send. */
export async function refuseUnauthorized(request: Request, checker: ApiKeyChecker, path = new URL(request.url).pathname): Promise<Response | null> {
  const token = presentedApiKey(request.headers, path);
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
      const refused = await refuseUnauthorized(c.req.raw, checker, c.req.path);
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
const JSON_BODY_ROUTES: ReadonlySet<string> = new Set([
  '/generate',
  '/v1/completions',
  '/v1/chat/completions',
  '/v1/messages',
  '/v1/messages/count_tokens',
  '/v1/responses',
  '/tokenize',
  '/detokenize',
]);

/** null when the request says its body is JSON; otherwise the 415 to send. */
export function refuseNonJson(request: Request): Response | null {
  const contentType = request.headers.get('content-type');
  if (isJsonContentType(contentType)) return null;
  const got = contentType === null || contentType.trim() === '' ? 'no Content-Type' : `Content-Type: ${preview(contentType)}`;
  return errorResponse(new HttpError(415, 'UnsupportedMediaTypeError', `Expected a JSON request body with Content-Type: application/json, got ${got}.`));
}

export function jsonContentTypeRequired(): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method === 'POST' && JSON_BODY_ROUTES.has(c.req.path)) {
      const refused = refuseNonJson(c.req.raw);
      if (refused !== null) return refused;
    }
    await next();
  };
}

/** Open to anyone even with a key: probes, scrapes and the version. */
const OPEN_PATHS: ReadonlySet<string> = new Set(['/health', '/health/live', '/metrics', '/version']);

/**
 * The checks for a front that routes some requests itself before the app (the fleet
 * gateway): the same three, applied the way the app applies them, except that with a key
 * every path but the open ones needs it (the front cannot know which paths its own
 * router would decode onto an API route, so it refuses rather than guess).
 */
export async function refuseAtFront(
  request: Request,
  checks: { allowedHosts: readonly string[] | null; apiKeys: ApiKeyChecker | null; requireJsonContentType: boolean; jsonRoutes: ReadonlySet<string> },
): Promise<Response | null> {
  if (checks.allowedHosts !== null) {
    const refused = refuseHost(request, checks.allowedHosts);
    if (refused !== null) return refused;
  }
  const { pathname } = new URL(request.url);
  if (checks.apiKeys !== null && request.method !== 'OPTIONS' && !OPEN_PATHS.has(pathname)) {
    const refused = await refuseUnauthorized(request, checks.apiKeys);
    if (refused !== null) return refused;
  }
  if (checks.requireJsonContentType && request.method === 'POST' && checks.jsonRoutes.has(pathname)) return refuseNonJson(request);
  return null;
}
