/**
 * Reads an upstream's response as it passes through, for the token counts of the
 * request log, /metrics and the per-key tokens-per-minute limit: the `usage` object the
 * upstream reports (its last one: with continuous usage every chunk has the running
 * total), else, for a stream without usage, one completion token per content event
 * (vLLM, llama.cpp and this project's server send one token per event). Bytes are passed
 * on unchanged and nothing is read ahead of the client.
 */
import { onStreamEnd } from './edge-limits.js';
import type { TokenUsage } from './exchange.js';

/** A non-streamed body larger than this is passed on without looking for its usage. */
const MAX_JSON_SCAN = 4 * 1024 * 1024;

interface Usage {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
}

function take(usage: Usage | null | undefined, into: TokenUsage): boolean {
  if (typeof usage !== 'object' || usage === null) return false;
  if (typeof usage.prompt_tokens === 'number') into.prompt = usage.prompt_tokens;
  if (typeof usage.completion_tokens === 'number') into.completion = usage.completion_tokens;
  return true;
}

/** `body` passed through, filling `into` as it goes (complete once the body has ended, failed or been cancelled). */
export function tapUsage(body: ReadableStream<Uint8Array>, contentType: string, into: TokenUsage): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const streamed = contentType.startsWith('text/event-stream');
  let partial = '';
  let contentEvents = 0;
  let sawUsage = false;
  let tooLong = false;

  const scanLine = (line: string) => {
    if (!line.startsWith('data:')) return;
    const payload = line.slice(5).trim();
    if (payload === '[DONE]' || payload === '') return;
    // vLLM and this project send "usage":null on every event: only an object is worth parsing.
    if (/"usage":\s*\{/.test(payload)) {
      try {
        if (take((JSON.parse(payload) as { usage?: Usage }).usage, into)) sawUsage = true;
      } catch {
        // Not JSON: the relay reports broken streams; nothing to count.
      }
    }
    if (payload.includes('"choices":[{') || payload.includes('"choices": [{')) contentEvents += 1;
  };

  const finish = () => {
    if (streamed) {
      if (partial !== '') scanLine(partial);
      if (!sawUsage || into.completion === null) into.completion = contentEvents;
      return;
    }
    if (tooLong) return;
    try {
      take((JSON.parse(partial) as { usage?: Usage }).usage, into);
    } catch {
      // An error body or not JSON: no usage.
    }
  };

  const onChunk = (chunk: Uint8Array) => {
    const text = decoder.decode(chunk, { stream: true });
    if (streamed) {
      // Only the new text is searched for a line end: re-splitting a long open line on every chunk was quadratic (issue 41).
      if (!text.includes('\n')) {
        partial += text;
        return;
      }
      const lines = text.split('\n');
      lines[0] = partial + lines[0];
      partial = lines.pop() ?? '';
      for (const line of lines) scanLine(line);
    } else if (!tooLong) {
      partial += text;
      if (partial.length > MAX_JSON_SCAN) {
        tooLong = true;
        partial = '';
      }
    }
  };
  return onStreamEnd(
    body,
    () => {
      partial += decoder.decode();
      finish();
    },
    onChunk,
  );
}
