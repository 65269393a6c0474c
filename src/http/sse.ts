import { streamingErrorPayload } from './errors.js';

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  // Keeps reverse proxies (nginx) from buffering the stream into one late response.
  'x-accel-buffering': 'no',
};

/** One Server-Sent Event carrying `data` (a JSON document: it never contains a newline). */
export function sseEvent(data: string): string {
  return `data: ${data}\n\n`;
}

/**
 * Streams `payloads` as SSE events, pulling the next one only when the client has
 * taken the previous (backpressure). `onCancel` runs when the consumer goes away
 * before the end (client disconnect): it must stop the generation behind the stream.
 */
export function sseResponse(payloads: AsyncIterable<string>, onCancel: () => void = () => {}): Response {
  const encoder = new TextEncoder();
  const iterator = payloads[Symbol.asyncIterator]();
  // After cancel() the controller is closed; a pull still waiting on the source must not touch it.
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await iterator.next();
        if (cancelled) return;
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(sseEvent(next.value)));
      } catch (error) {
        if (cancelled) return;
        // The serving modules report their own errors in-stream; this is the backstop
        // so a failure never tears the connection down without a word.
        controller.enqueue(encoder.encode(sseEvent(streamingErrorPayload(error))));
        controller.close();
      }
    },
    async cancel() {
      cancelled = true;
      onCancel();
      await iterator.return?.();
    },
  });
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}
