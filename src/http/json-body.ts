import { yieldToEventLoop } from '../threads/yield.js';

/**
 * JSON responses that never hold the event loop for one big JSON.stringify: the body is
 * written in chunks of about CHUNK_CHARS characters, with the event loop free between
 * them (a 24 MB logprobs response took ~0.2 s in one piece, and /health waited). A body
 * that fits in one chunk is sent as one string, as c.json would.
 *
 * Same text as JSON.stringify for the plain data the routes return (objects, arrays,
 * strings, numbers, booleans, null; undefined properties left out, undefined in arrays as null).
 */
export const CHUNK_CHARS = 64 * 1024;

/**
 * Arrays longer than this are written in blocks of this many elements per JSON.stringify
 * call (their elements are small: token ids, logprob entries); shorter ones, and objects
 * down to MAX_DEPTH, are walked so a few huge children (choices) land in separate chunks.
 * One generator step per element would cost more than the serializing itself.
 */
const BLOCK = 64;
const MAX_DEPTH = 6;

function skipped(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

function* pieces(value: unknown, depth = 0): Generator<string> {
  if (Array.isArray(value)) {
    if (value.length > BLOCK || depth >= MAX_DEPTH) {
      if (value.length <= BLOCK) {
        yield JSON.stringify(value);
        return;
      }
      yield '[';
      for (let start = 0; start < value.length; start += BLOCK) {
        // JSON.stringify of a slice writes its holes and undefined as null, as of the whole.
        yield `${start > 0 ? ',' : ''}${JSON.stringify(value.slice(start, start + BLOCK)).slice(1, -1)}`;
      }
      yield ']';
      return;
    }
    yield '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ',';
      const item = value[i];
      if (skipped(item)) yield 'null';
      else yield* pieces(item, depth + 1);
    }
    yield ']';
    return;
  }
  if (value !== null && typeof value === 'object' && depth < MAX_DEPTH && typeof (value as { toJSON?: unknown }).toJSON !== 'function') {
    yield '{';
    let first = true;
    for (const [key, item] of Object.entries(value)) {
      if (skipped(item)) continue;
      yield `${first ? '' : ','}${JSON.stringify(key)}:`;
      first = false;
      yield* pieces(item, depth + 1);
    }
    yield '}';
    return;
  }
  yield JSON.stringify(value) ?? 'null';
}

function nextChunk(source: Iterator<string>): { text: string; done: boolean } {
  let text = '';
  while (text.length < CHUNK_CHARS) {
    const next = source.next();
    if (next.done) return { text, done: true };
    text += next.value;
  }
  return { text, done: false };
}

/** The JSON text of `value` in chunks (for tests and for bodies written elsewhere). */
export async function* jsonChunks(value: unknown): AsyncGenerator<string> {
  const source = pieces(value);
  for (;;) {
    const { text, done } = nextChunk(source);
    if (text !== '') yield text;
    if (done) return;
    await yieldToEventLoop();
  }
}

/** A JSON response whose body is serialized chunk by chunk, the event loop free in between. */
export function jsonResponse(value: unknown, init: { status?: number; headers?: Record<string, string> } = {}): Response {
  const headers = { 'content-type': 'application/json', ...init.headers };
  const source = pieces(value);
  const first = nextChunk(source);
  if (first.done) return new Response(first.text, { status: init.status ?? 200, headers });
  const encoder = new TextEncoder();
  let pending: string | null = first.text;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (pending !== null) {
        controller.enqueue(encoder.encode(pending));
        pending = null;
        return;
      }
      await yieldToEventLoop();
      const { text, done } = nextChunk(source);
      if (text !== '') controller.enqueue(encoder.encode(text));
      if (done) controller.close();
    },
  });
  return new Response(body, { status: init.status ?? 200, headers });
}
