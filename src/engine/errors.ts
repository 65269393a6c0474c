/**
 * A request the engine cannot run as given (empty prompt, token id outside the
 * vocabulary, prompt longer than the context). The HTTP layer reports it as a 400; the
 * protocol layer normally refuses such requests before they get here.
 */
export class EngineRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineRequestError';
  }
}

/**
 * The engine cannot take the request now (waiting queue full, or the request waited
 * past its deadline). Nothing already admitted is affected; the client may retry later.
 * The HTTP layer reports it as a 503 with Retry-After.
 */
export class EngineOverloadedError extends Error {
  constructor(
    message: string,
    /** Seconds after which a retry has a fair chance. */
    readonly retryAfterSeconds: number,
  ) {
    super(message);
    this.name = 'EngineOverloadedError';
  }
}
