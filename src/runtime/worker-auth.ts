/**
 * The optional bearer-token check at the edge, as vLLM's --api-key does it: every route
 * needs `Authorization: Bearer <token>` except the health probe, which load balancers
 * call without credentials.
 */
import { errorResponse, HttpError } from '../http/errors.js';

const OPEN_PATHS: ReadonlySet<string> = new Set(['/health']);

async function digest(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
}

/**
 * Compares digests rather than the strings so the time taken does not depend on how many
 * leading characters of a guess were right, nor on the token's length.
 */
async function sameSecret(given: string, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all([digest(given), digest(expected)]);
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}

/** null when the request may pass; otherwise the 401 to send. */
export async function checkBearerToken(request: Request, token: string): Promise<Response | null> {
  if (OPEN_PATHS.has(new URL(request.url).pathname)) return null;
  const header = request.headers.get('authorization') ?? '';
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  if (match !== null && (await sameSecret(match[1], token))) return null;
  return errorResponse(
    new HttpError(401, 'UnauthorizedError', 'Missing or invalid API key: send it as "Authorization: Bearer <key>".', null, {
      'www-authenticate': 'Bearer',
    }),
  );
}
