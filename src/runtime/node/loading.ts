/**
 * What the Node server answers between binding its port and having its model ready: the
 * port is bound first (a clash fails at once, not after a long load), and until the model is
 * loaded every request gets a 503 that says so. GET /health is a bare 503, as vLLM's health
 * endpoint answers when the server is not ready; the API routes get the OpenAI error body,
 * naming the model and the load's current stage, with Retry-After.
 */
import { errorResponse, HttpError } from '../../http/errors.js';

export interface LoadingState {
  /** The model being loaded, as given (a path or a Hugging Face id). */
  model: string;
  /** What the load is doing now ("reading the model files ..."). */
  stage: string;
}

const RETRY_AFTER_SECONDS = '1';

export function loadingFetch(state: LoadingState): (request: Request) => Response {
  return (request) => {
    if (new URL(request.url).pathname === '/health') return new Response(null, { status: 503, headers: { 'Retry-After': RETRY_AFTER_SECONDS } });
    const response = errorResponse(
      new HttpError(503, 'ServiceUnavailableError', `The server is starting: the model "${state.model}" is loading (${state.stage}). Retry shortly.`),
    );
    response.headers.set('Retry-After', RETRY_AFTER_SECONDS);
    return response;
  };
}
