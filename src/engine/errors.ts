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
 * Refuses a prompt no engine can run: empty, with a token id outside the vocabulary, or
 * filling the whole context (nothing left to generate). Every engine checks the same way,
 * so the same request gets the same 400 whichever one serves it.
 */
export function checkPromptTokenIds(promptTokenIds: readonly number[], vocabSize: number, maxModelLen: number): void {
  if (promptTokenIds.length === 0) throw new EngineRequestError('The prompt is empty: it must contain at least one token.');
  for (const id of promptTokenIds) {
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
      throw new EngineRequestError(`Token id ${id} is out of vocabulary (valid ids are 0 to ${vocabSize - 1}).`);
    }
  }
  if (promptTokenIds.length >= maxModelLen) {
    throw new EngineRequestError(
      `The prompt has ${promptTokenIds.length} tokens; this model's context is ${maxModelLen} tokens, which leaves no room to generate.`,
    );
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

/**
 * A stream's client did not read its output: more of it waited unread than the stream's
 * share or the server's budget allows (unread-output.ts), or the socket took nothing for
 * the write timeout. The generation is stopped and the stream ends with this error's
 * event; the HTTP layer reports it as a 408.
 */
export class EngineOutputUnreadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineOutputUnreadError';
  }
}
