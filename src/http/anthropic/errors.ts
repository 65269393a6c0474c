/**
 * Errors in Anthropic's shape on its routes: `{"type": "error", "error": {"type", "message"}}`,
 * the body @anthropic-ai/sdk reads (its typed errors come from the status). Every refusal
 * on /v1/messages (the API key, the body limit, validation, the engine) is first built by
 * the app's one error mapping (../errors.ts) and reshaped here, so both dialects say the
 * same thing with the same status.
 */
import type { MiddlewareHandler } from 'hono';
import { mapError } from '../errors.js';

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
}

/** Anthropic's error types by status (its API reference's table; 503 is its overloaded_error). */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
    case 405:
    case 415:
    case 422:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    case 504:
      return 'timeout_error';
    default:
      return status < 500 ? 'invalid_request_error' : 'api_error';
  }
}

/** The message with the field at fault named, as Anthropic's own messages do ("messages.0.content: ..."). */
function anthropicMessage(message: string, param: string | null): string {
  return param === null || message.startsWith(param) ? message : `${param}: ${message}`;
}

export function anthropicErrorBody(status: number, message: string, param: string | null = null): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(status), message: anthropicMessage(message, param) } };
}

/** The `error` event's data for a failure after the stream started. */
export function anthropicStreamError(error: unknown): AnthropicErrorBody {
  const { status, body } = mapError(error);
  return anthropicErrorBody(status, body.message, body.param);
}

/** An error response of this server (its OpenAI / vLLM body) in Anthropic's shape, status and headers kept; any other response as it is. */
export async function asAnthropicError(response: Response): Promise<Response> {
  if (response.status < 400 || !(response.headers.get('content-type') ?? '').includes('json')) return response;
  let body: { object?: unknown; message?: unknown; param?: unknown };
  try {
    body = (await response.clone().json()) as typeof body;
  } catch {
    return response;
  }
  if (body.object !== 'error' || typeof body.message !== 'string') return response;
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  const param = typeof body.param === 'string' ? body.param : null;
  return Response.json(anthropicErrorBody(response.status, body.message, param), { status: response.status, headers });
}

/** Rewrites the app's error responses on the routes it guards into Anthropic's shape. */
export function anthropicErrors(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    const reshaped = await asAnthropicError(c.res);
    if (reshaped === c.res) return;
    c.res = undefined;
    c.res = reshaped;
  };
}
