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

/** One named Server-Sent Event (`event: <name>`), as Anthropic's and the Responses API's streams send them. */
export function namedSseEvent(name: string, data: string): string {
  return `event: ${name}\ndata: ${data}\n\n`;
}

/** How a stream's payloads become events: OpenAI's chat and completions send `data:` lines; other dialects frame their own. */
export interface SseFraming {
  event(payload: string): string;
  /** The last event when the source throws (the serving modules report their own errors; this is the backstop). */
  error(error: unknown): string;
}

const DATA_EVENTS: SseFraming = { event: sseEvent, error: (error) => sseEvent(streamingErrorPayload(error)) };

/** For payloads that are already whole events (namedSseEvent): sent as they are, with the dialect's error event. */
export function preFramed(error: (error: unknown) => string): SseFraming {
  return { event: (payload) => payload, error };
}

/**
 * The framed events of one SSE response, for a home that writes them to its socket itself
 * (Node: straight into the ServerResponse, without the web-stream layers between).
 */
export interface SseEvents {
  /** The next framed event, or undefined at the end. An exception from the source becomes a last error event. */
  next(): Promise<string | undefined>;
  /** The client went away before the end: stop the generation behind the stream. */
  cancel(): Promise<void>;
  /**
   * End the stream early with `error` (a client that stopped reading, a shutdown): the
   * generation is stopped, and the next events are the stream's error event and whatever
   * its dialect sends after one ([DONE]), then the end.
   */
  interrupt(error: Error): void;
}

/** What stops the source behind a stream: a generation run (abort, and cut with an error) or a bare cancel. */
export interface StreamControl {
  abort(): void;
  /** Stops the source so that its next pull throws `error` (which the serving module reports in-stream). */
  cut?(error: Error): void;
}

/** Streams not yet read, by body: a home may take one over once (sseEventsOf). */
const unread = new WeakMap<ReadableStream<Uint8Array>, SseEvents>();

/**
 * The events behind an `sseResponse` body that nobody has read yet, taken over by the
 * caller: the body must then never be read. Undefined for any other body.
 */
export function takeSseEvents(body: ReadableStream<Uint8Array> | null): SseEvents | undefined {
  if (body === null) return undefined;
  const events = unread.get(body);
  unread.delete(body);
  return events;
}

function framedEvents(payloads: AsyncIterable<string>, control: StreamControl, framing: SseFraming): SseEvents {
  const iterator = payloads[Symbol.asyncIterator]();
  let finished = false;
  // A source that cannot be cut ends with this error's event, framed here.
  let interruption: Error | null = null;
  const endWith = (error: unknown) => {
    finished = true;
    void iterator.return?.()?.catch(() => {});
    return framing.error(error);
  };
  return {
    async next() {
      if (finished) return undefined;
      if (interruption !== null) return endWith(interruption);
      try {
        const next = await iterator.next();
        if (interruption !== null) return endWith(interruption);
        if (!next.done) return framing.event(next.value);
      } catch (error) {
        finished = true;
        // The serving modules report their own errors in-stream; this is the backstop
        // so a failure never tears the connection down without a word.
        return framing.error(error);
      }
      finished = true;
      return undefined;
    },
    async cancel() {
      finished = true;
      control.abort();
      await iterator.return?.();
    },
    interrupt(error) {
      if (finished) return;
      if (control.cut !== undefined) {
        control.cut(error);
      } else {
        interruption ??= error;
        control.abort();
      }
    },
  };
}

/**
 * Streams `payloads` as SSE events, pulling the next one only when the client has
 * taken the previous (backpressure). `control` stops the generation behind the stream:
 * its abort when the consumer goes away before the end (client disconnect), its cut when
 * the stream is ended early with an error (SseEvents.interrupt); a bare function is an abort.
 */
export function sseResponse(
  payloads: AsyncIterable<string>,
  control: StreamControl | (() => void) = () => {},
  framing: SseFraming = DATA_EVENTS,
): Response {
  const events = framedEvents(payloads, typeof control === 'function' ? { abort: control } : control, framing);
  const encoder = new TextEncoder();
  // After cancel() the controller is closed; a pull still waiting on the source must not touch it.
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        unread.delete(body);
        const event = await events.next();
        if (cancelled) return;
        if (event === undefined) controller.close();
        else controller.enqueue(encoder.encode(event));
      },
      async cancel() {
        cancelled = true;
        await events.cancel();
      },
    },
    // No read ahead: nothing is pulled before a reader asks, so a home can still take the events over.
    { highWaterMark: 0 },
  );
  unread.set(body, events);
  return new Response(body, { status: 200, headers: SSE_HEADERS });
}
