/**
 * Sends one request and feeds the response into a RunState as it arrives. The same code
 * runs against the server (the page's fetch) and against the in-page app (its
 * `app.fetch`): both hand back a standard Response.
 */
import { APIS } from './apis.js';
import type { RunState } from './run-state.js';
import { SseParser } from './sse.js';

/** `path` is an API path such as /v1/chat/completions. */
export type ApiFetch = (path: string, init: RequestInit) => Promise<Response>;

function describeHeaders(response: Response): string {
  const lines = [`HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`];
  const type = response.headers.get('content-type');
  if (type) lines.push(`content-type: ${type}`);
  return `${lines.join('\n')}\n\n`;
}

export async function sendRequest(
  apiFetch: ApiFetch,
  state: RunState,
  bodyJson: string,
  signal: AbortSignal,
  onUpdate: () => void,
): Promise<void> {
  try {
    // Stopped while the in-page engine was still loading: nothing to send.
    if (signal.aborted) throw new DOMException('Stopped before sending', 'AbortError');
    const response = await apiFetch(APIS[state.api].path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: state.stream ? 'text/event-stream' : 'application/json' },
      body: bodyJson,
      signal,
    });
    state.status = response.status;
    state.raw = describeHeaders(response);
    onUpdate();
    const isStream = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
    if (response.ok && isStream && response.body) await readStream(response.body, state, signal, onUpdate);
    else await readWhole(response, state);
  } catch (error) {
    if (signal.aborted) state.stopped = true;
    else state.setError(`The request failed before a response arrived: ${(error as Error).message}`, null);
  } finally {
    state.endedAt = performance.now();
    onUpdate();
  }
}

async function readWhole(response: Response, state: RunState): Promise<void> {
  const text = await response.text();
  state.raw += text;
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: shown as it is.
  }
  if (!response.ok) state.setError(body, response.status);
  else if (!state.applyBody(body, performance.now())) state.setError(`Unexpected response body: ${text.slice(0, 200)}`, response.status);
}

async function readStream(body: ReadableStream<Uint8Array>, state: RunState, signal: AbortSignal, onUpdate: () => void): Promise<void> {
  const reader = body.getReader();
  // The in-page app's stream does not watch the request's signal: cancelling the reader
  // is what stops its generation (the server side sees the connection close instead).
  const cancel = () => void reader.cancel().catch(() => {});
  signal.addEventListener('abort', cancel, { once: true });
  const decoder = new TextDecoder();
  const parser = new SseParser();
  const apply = (events: string[]) => {
    const now = performance.now();
    for (const data of events) state.applyEvent(data, now);
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const text = decoder.decode(value, { stream: true });
      state.raw += text;
      apply(parser.push(text));
      onUpdate();
    }
    apply(parser.end());
    if (signal.aborted) state.stopped = true;
  } finally {
    signal.removeEventListener('abort', cancel);
  }
}
