/**
 * At the end of a shutdown's grace period every request still without an answer gets one:
 * the documented 503. Cutting generations and thread jobs answers the requests that wait
 * on them, but a request can be anywhere else too (its body still being read, behind a
 * loaded loop, in the tokenizer's queue); when the connections were closed a moment later
 * it got no answer at all (a client's "fetch failed", seen under load in CI).
 */
import { errorResponse, type HttpError } from '../../http/errors.js';

type Fetch = (request: Request, ...rest: never[]) => Response | Promise<Response>;

export interface UnansweredRequests<F> {
  fetch: F;
  /** Answers every request whose handler has not returned with `error`; returns how many. */
  answerAll(error: HttpError): number;
}

export function answerableAtShutdown<F extends Fetch>(fetch: F): UnansweredRequests<F> {
  const waiting = new Set<(response: Response) => void>();
  const wrapped = ((request: Request, ...rest: never[]) => {
    let answer!: (response: Response) => void;
    const answeredForIt = new Promise<Response>((resolve) => (answer = resolve));
    waiting.add(answer);
    const handled = (async () => fetch(request, ...rest))();
    let cut = false;
    // A handler that returns after its request was answered for it: its body (a stream, maybe) is let go.
    void handled.then(
      (response) => {
        if (cut) void response.body?.cancel().catch(() => {});
      },
      () => {},
    );
    return Promise.race([
      handled,
      answeredForIt.then((response) => {
        cut = true;
        return response;
      }),
    ]).finally(() => waiting.delete(answer));
  }) as F;
  return {
    fetch: wrapped,
    answerAll(error) {
      const answers = [...waiting];
      waiting.clear();
      for (const answer of answers) answer(errorResponse(error));
      return answers.length;
    },
  };
}
