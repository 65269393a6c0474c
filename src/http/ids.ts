/** A random hex id, as vLLM's random_uuid(). */
export function randomHex(): string {
  return crypto.randomUUID().replaceAll('-', '');
}

/** Request ids in vLLM's style: a prefix and a random hex string ("cmpl-3f2a..."). */
export function randomId(prefix: string): string {
  return `${prefix}-${randomHex()}`;
}

/**
 * A client's request id is taken only as a short token of safe characters (a UUID, a
 * trace id, "req_42"); anything else (long, spaces, control or non-ASCII characters)
 * is dropped and the server makes one. It is echoed in a header, in every chunk and in
 * the log, so it must be small and unable to break any of them.
 */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

/** The client's id if it is such a token, else null. */
export function clientRequestId(value: string | null | undefined): string | null {
  return typeof value === 'string' && CLIENT_REQUEST_ID.test(value) ? value : null;
}

/**
 * The id of an OpenAI response: the client's X-Request-Id header or body `request_id`
 * when it sent a valid one (so logs on both sides match), else the request log's id, else random.
 */
export function responseId(prefix: string, request: Request, bodyRequestId?: string, logId?: string): string {
  const base = clientRequestId(request.headers.get('x-request-id')) ?? clientRequestId(bodyRequestId) ?? logId ?? randomHex();
  return `${prefix}-${base}`;
}

/** Unix time in whole seconds, the `created` field of OpenAI objects. */
export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
