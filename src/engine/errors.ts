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
