/**
 * Errors the protocol layer raises for a request it refuses. They carry no HTTP status:
 * src/http maps `kind` to a status code and to the OpenAI-style error body
 * {"object":"error","message":...,"type":...,"param":...,"code":...}.
 */
export type ProtocolErrorKind =
  /** Malformed or out-of-range input: 400 BadRequestError. */
  | 'invalid_request'
  /** The named model / adapter is not served: 404 NotFoundError. */
  | 'not_found'
  /** The server cannot take more work now: 503 (with Retry-After). */
  | 'overloaded'
  /** This client has its share of a shared resource in use: 429 (with Retry-After). */
  | 'rate_limited';

export class ProtocolError extends Error {
  constructor(
    readonly kind: ProtocolErrorKind,
    message: string,
    /** The request parameter at fault, e.g. "temperature" or "messages[1].content". */
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = 'ProtocolError';
  }
}

export function invalidRequest(message: string, param: string | null = null): ProtocolError {
  return new ProtocolError('invalid_request', message, param);
}
