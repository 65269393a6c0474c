/**
 * What an upstream's error means for our client. The upstream's own error shape
 * ({"object":"error",...} from vLLM 0.6 and this project, {"error":{...}} from OpenAI and
 * newer vLLM) is read for its message and param; the status decides who is at fault:
 * the request (400: the client sees the upstream's message), capacity (429/503: retry
 * later), or the deployment (anything else: an UpstreamError, a server error for our
 * client, since it cannot fix the upstream's configuration or outage).
 */
import { ProtocolError } from '../../common/protocol-error.js';
import { EngineOverloadedError } from '../errors.js';

/**
 * The upstream failed in a way the client cannot fix: unreachable, refused our
 * credentials, does not serve the model, answered 5xx, or broke the stream off.
 */
export class UpstreamError extends Error {
  constructor(
    message: string,
    /** The upstream's HTTP status, when it answered at all. */
    readonly upstreamStatus: number | null = null,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }
}

/** The upstream took longer than one of its deadlines (gateway timeouts): a 504 naming it. */
export class UpstreamTimeoutError extends UpstreamError {
  constructor(
    message: string,
    /** The upstream's configured name. */
    readonly upstream: string,
  ) {
    super(message);
    this.name = 'UpstreamTimeoutError';
  }
}

interface UpstreamErrorBody {
  message?: unknown;
  param?: unknown;
  code?: unknown;
}

/** The error object inside an upstream's error body or error event, whichever shape it uses. */
export function upstreamErrorBody(json: unknown): UpstreamErrorBody | null {
  if (typeof json !== 'object' || json === null) return null;
  const inner = (json as { error?: unknown }).error;
  if (typeof inner === 'object' && inner !== null) return inner as UpstreamErrorBody;
  if ((json as { object?: unknown }).object === 'error') return json as UpstreamErrorBody;
  return null;
}

function retryAfterSeconds(header: string | null): number {
  const seconds = header === null ? NaN : Number(header.trim());
  return Number.isFinite(seconds) && seconds >= 0 ? Math.max(1, Math.ceil(seconds)) : 1;
}

/** Maps an upstream failure (status + parsed body) onto the engine's error vocabulary. */
export function upstreamFailure(status: number, body: UpstreamErrorBody | null, retryAfter: string | null = null): Error {
  const message = typeof body?.message === 'string' && body.message !== '' ? body.message : null;
  const param = typeof body?.param === 'string' ? body.param : null;
  if (status === 400 || status === 413 || status === 422) {
    return new ProtocolError('invalid_request', message ?? `The upstream refused the request (HTTP ${status}).`, param);
  }
  if (status === 429 || status === 503) {
    return new EngineOverloadedError(message ?? 'The upstream is busy. Retry later.', retryAfterSeconds(retryAfter));
  }
  const detail = message !== null ? `: ${message}` : '';
  if (status === 401 || status === 403) {
    return new UpstreamError(`The upstream refused this server's credentials (HTTP ${status})${detail}`, status);
  }
  if (status === 404) return new UpstreamError(`The upstream does not serve the requested model or path (HTTP 404)${detail}`, status);
  return new UpstreamError(`The upstream failed (HTTP ${status})${detail}`, status);
}

/** An error event inside an upstream stream: its `code` is the status it would have had. */
export function upstreamStreamFailure(body: UpstreamErrorBody): Error {
  const status = typeof body.code === 'number' ? body.code : 500;
  return upstreamFailure(status, body);
}
