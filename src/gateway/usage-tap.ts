/**
 * Reads an upstream's response as it passes through, for the token counts of the
 * request log, /metrics and the per-key tokens-per-minute limit: the `usage` object the
 * upstream reports (its last one: with continuous usage every chunk has the running
 * total), else, for a stream without usage, one completion token per content event
 * (vLLM, llama.cpp and this project's server send one token per event). Bytes are passed
 * on unchanged and nothing is read ahead of the client.
 *
 * The dialects forwarded as received report usage in their own words: Anthropic's
 * Messages `input_tokens` / `output_tokens` (in `message` of message_start, then the
 * running output count in message_delta), OpenAI's Responses the same names inside
 * `response` of response.completed; a key's budget counts them as it counts chat usage.
 */
import { onStreamEnd } from './edge-limits.js';
import type { TokenUsage } from './exchange.js';

/** A non-streamed body larger than this is passed on without looking for its usage. */
const MAX_JSON_SCAN = 4 * 1024 * 1024;

interface Usage {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
  input_tokens?: unknown;
  output_tokens?: unknown;
}

/** Where a body or event carries its usage: at the top (OpenAI, Anthropic's message_delta), in `message` (message_start) or `response` (Responses' events). */
interface UsageCarrier {
  usage?: Usage | null;
  message?: { usage?: Usage | null } | null;
  response?: { usage?: Usage | null } | null;
}

function usageOf(carrier: UsageCarrier | null): Usage | null | undefined {
  if (typeof carrier !== 'object' || carrier === null) return null;
  return carrier.usage ?? carrier.message?.usage ?? carrier.response?.usage;
}

function take(usage: Usage | null | undefined, into: TokenUsage): boolean {
  if (typeof usage !== 'object' || usage === null) return false;
  const prompt = usage.prompt_tokens ?? usage.input_tokens;
  const completion = usage.completion_tokens ?? usage.output_tokens;
  if (typeof prompt === 'number') into.prompt = prompt;
  if (typeof completion === 'number') into.completion = completion;
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
        if (take(usageOf(JSON.parse(payload) as UsageCarrier), into)) sawUsage = true;
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
      take(usageOf(JSON.parse(partial) as UsageCarrier), into);
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
