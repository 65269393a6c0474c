import { UpstreamError, UpstreamTimeoutError } from '../engine/remote/errors.js';
import { EngineOverloadedError, EngineRequestError } from '../engine/errors.js';
import { ProtocolError, type ProtocolErrorKind } from '../common/protocol-error.js';
import { ChatTemplateError } from '../tokenizer/chat-template.js';
import { ThreadQueueFullError } from '../threads/queue-full-error.js';

/** OpenAI's error object: what openai-node, the AI SDK and LangChain read (`error.message`, `error.param`). */
export interface ErrorInfo {
  message: string;
  type: string;
  param: string | null;
  code: number;
}

/**
 * The body of every error this server returns: vLLM 0.6's flat ErrorResponse (the
 * specified shape) with OpenAI's nested `error` beside it. With the flat form alone the
 * clients find no `error` key and report "400 status code (no body)".
 */
export interface ErrorBody extends ErrorInfo {
  object: 'error';
  error: ErrorInfo;
}

/** An error that already knows its HTTP status: raised by the HTTP layer itself. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export function badRequest(message: string, param: string | null = null): HttpError {
  return new HttpError(400, 'BadRequestError', message, param);
}

export function notFound(message: string): HttpError {
  return new HttpError(404, 'NotFoundError', message);
}

/** vLLM's wording for a request naming a model this server does not serve. */
export function modelNotFound(model: string): HttpError {
  return notFound(`The model \`${model}\` does not exist.`);
}

const PROTOCOL_STATUS: Record<ProtocolErrorKind, { status: number; type: string; headers?: Record<string, string> }> = {
  invalid_request: { status: 400, type: 'BadRequestError' },
  not_found: { status: 404, type: 'NotFoundError' },
  overloaded: { status: 503, type: 'ServiceUnavailableError', headers: { 'retry-after': '1' } },
};

export interface MappedError {
  status: number;
  body: ErrorBody;
  headers: Record<string, string>;
}

/**
 * The single place that turns anything thrown while serving a request into a status
 * and an error body. Unknown errors are the server's fault: 500, message only, and
 * they are logged since the client cannot act on them.
 */
export function mapError(error: unknown): MappedError {
  if (error instanceof HttpError) {
    return shaped(error.status, error.type, error.message, error.param, error.headers);
  }
  if (error instanceof ProtocolError) {
    const { status, type, headers = {} } = PROTOCOL_STATUS[error.kind];
    return shaped(status, type, error.message, error.param, headers);
  }
  if (error instanceof ChatTemplateError) {
    return shaped(400, 'BadRequestError', error.message, 'messages', {});
  }
  if (error instanceof EngineRequestError) {
    return shaped(400, 'BadRequestError', error.message, null, {});
  }
  if (error instanceof EngineOverloadedError) {
    return shaped(503, 'ServiceUnavailableError', error.message, null, { 'retry-after': String(error.retryAfterSeconds) });
  }
  if (error instanceof ThreadQueueFullError) {
    const type = error.status === 429 ? 'RateLimitError' : 'ServiceUnavailableError';
    return shaped(error.status, type, error.message, null, { 'retry-after': String(error.retryAfterSeconds) });
  }
  if (error instanceof UpstreamTimeoutError) {
    return shaped(504, 'GatewayTimeoutError', error.message, null, {});
  }
  if (error instanceof UpstreamError) {
    // The delegate engine's upstream failed: a gateway error, not a fault of this server or the request.
    return shaped(502, 'BadGatewayError', error.message, null, {});
  }
  console.error('Unexpected error while serving a request:', error);
  const reason = error instanceof Error && error.message ? error.message : 'unknown error';
  return shaped(500, 'InternalServerError', `Internal server error: ${reason}`, null, {});
}

function shaped(
  status: number,
  type: string,
  message: string,
  param: string | null,
  headers: Record<string, string>,
): MappedError {
  return { status, headers, body: errorBody(status, type, message, param) };
}

/**
 * The longest message and param an error body carries. Every error body is built here, so
 * however a message came to quote a client's value (a field name, a key, a literal), no
 * response can echo more than this of it.
 */
export const MAX_ERROR_MESSAGE_CHARS = 1024;
export const MAX_ERROR_PARAM_CHARS = 128;

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The error body for a status, type, message and param (for the few places that build one outside mapError). */
export function errorBody(status: number, type: string, message: string, param: string | null = null): ErrorBody {
  const info: ErrorInfo = {
    message: clip(message, MAX_ERROR_MESSAGE_CHARS),
    type,
    param: param === null ? null : clip(param, MAX_ERROR_PARAM_CHARS),
    code: status,
  };
  return { object: 'error', ...info, error: info };
}

export function errorResponse(error: unknown): Response {
  const { status, body, headers } = mapError(error);
  return Response.json(body, { status, headers });
}

/**
 * The SSE payload for an error after a stream has started (status already sent): the
 * same body as a response would carry. Its `error` key is what the OpenAI clients and
 * the AI SDK look for to raise the error instead of handing it over as a chunk.
 */
export function streamingErrorPayload(error: unknown): string {
  return JSON.stringify(mapError(error).body);
}
