/** A random hex id, as vLLM's random_uuid(). */
export function randomHex(): string {
  return crypto.randomUUID().replaceAll('-', '');
}

/** Request ids in vLLM's style: a prefix and a random hex string ("cmpl-3f2a..."). */
export function randomId(prefix: string): string {
  return `${prefix}-${randomHex()}`;
}

/**
 * The id of an OpenAI response: the client's X-Request-Id header or body `request_id`
 * when it sent one (so logs on both sides match), else the request log's id, else random.
 */
export function responseId(prefix: string, request: Request, bodyRequestId?: string, logId?: string): string {
  const base = request.headers.get('x-request-id') ?? bodyRequestId ?? logId ?? randomHex();
  return `${prefix}-${base}`;
}

/** Unix time in whole seconds, the `created` field of OpenAI objects. */
export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
