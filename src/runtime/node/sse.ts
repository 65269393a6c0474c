/**
 * SSE under Node without web streams: an `sseResponse` body is written straight into
 * node:http's ServerResponse (strings, no TextEncoder, no ReadableStream reader loop in
 * @hono/node-server, whose first reads also wait a timer tick to guess a content-length).
 * Bytes, headers, backpressure and disconnect handling are those of the web path.
 */
import type { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { HttpError } from '../../http/errors.js';
import { takeSseEvents, type SseEvents } from '../../http/sse.js';

type Fetch = (request: Request, env: { outgoing?: ServerResponse }) => Response | Promise<Response>;

/** A stream being written, as the shutdown sees it. */
interface LiveStream {
  end(error: Error): void;
}

/**
 * The streams being written by `writingSseDirectly`: at shutdown, each is ended with an
 * error event that leaves whole (a client still reading gets it, and [DONE], after the last
 * complete event) instead of being cut mid-event when the connections close.
 */
export class LiveSseStreams {
  private readonly streams = new Set<LiveStream>();

  get size(): number {
    return this.streams.size;
  }

  /** @internal */
  add(stream: LiveStream): () => void {
    this.streams.add(stream);
    return () => this.streams.delete(stream);
  }

  /** Ends every stream with `error`'s event; returns how many. */
  endAll(error: Error): number {
    const streams = [...this.streams];
    for (const stream of streams) stream.end(error);
    return streams.length;
  }
}

export interface DirectSseOptions {
  /** A stream whose socket takes nothing for this long is ended with a 408 error event (streamWriteTimeoutMs). */
  writeTimeoutMs?: number;
  /** Where the streams being written are kept, for the shutdown. */
  streams?: LiveSseStreams;
}

/** Wraps an app's fetch so SSE responses are written to `env.outgoing` directly; everything else passes through. */
export function writingSseDirectly<F extends Fetch>(fetch: F, options: DirectSseOptions = {}): F {
  return (async (request: Request, env: { outgoing?: ServerResponse }) => {
    const response = await fetch(request, env);
    const outgoing = env?.outgoing;
    if (outgoing === undefined || outgoing.headersSent) return response;
    const events = takeSseEvents(response.body);
    if (events === undefined) return response;
    outgoing.writeHead(response.status, outgoingHeaders(response.headers));
    // The status line leaves now, as it does on the web path, before the first token.
    outgoing.flushHeaders();
    void pump(events, outgoing, options);
    return RESPONSE_ALREADY_SENT;
  }) as F;
}

function outgoingHeaders(headers: Headers): Record<string, string | string[]> {
  const record: Record<string, string | string[]> = {};
  headers.forEach((value, name) => {
    if (name !== 'set-cookie') record[name] = value;
  });
  const cookies = headers.getSetCookie();
  if (cookies.length > 0) record['set-cookie'] = cookies;
  return record;
}

/**
 * Events a stream ended early may still write without waiting for its client: its error
 * event and what its dialect sends after one ([DONE]). Past them it is closed.
 */
const MAX_TAIL_EVENTS = 8;
/** How long an ended stream's last events get to leave before a client that reads nothing is disconnected. */
const TAIL_FLUSH_MS = 5000;

async function pump(events: SseEvents, outgoing: ServerResponse, options: DirectSseOptions): Promise<void> {
  let gone = false;
  let wake: (() => void) | undefined;
  // Set when the stream is ended early: what is left (its error event) is written without waiting.
  let ending = false;
  const onClose = () => {
    if (outgoing.writableFinished) return;
    gone = true;
    wake?.();
    void events.cancel();
  };
  const onDrain = () => wake?.();
  const end = (error: Error) => {
    if (ending || gone) return;
    ending = true;
    events.interrupt(error);
    wake?.();
  };
  const forget = options.streams?.add({ end });
  outgoing.on('close', onClose);
  outgoing.on('drain', onDrain);
  // A client that left while the request was being prepared (an abort within milliseconds)
  // closed the connection before these listeners existed: its 'close' has been and gone,
  // and a write would wait for a 'drain' that never comes, keeping the request open.
  if (outgoing.destroyed || outgoing.socket === null || outgoing.socket.destroyed) onClose();
  const timeoutMs = options.writeTimeoutMs;
  let tail = 0;
  try {
    for (;;) {
      const event = await events.next();
      if (gone) return;
      if (event === undefined) break;
      const taken = outgoing.write(event);
      if (ending) {
        if (++tail > MAX_TAIL_EVENTS) {
          outgoing.destroy();
          return;
        }
        continue;
      }
      // Backpressure: the next event is asked for only once the socket took this one.
      if (!taken && !gone) {
        let timer: NodeJS.Timeout | undefined;
        let timedOut = false;
        await new Promise<void>((resolve) => {
          wake = resolve;
          if (timeoutMs !== undefined) {
            timer = setTimeout(() => {
              timedOut = true;
              resolve();
            }, timeoutMs);
          }
        });
        clearTimeout(timer);
        if (timedOut && !gone) {
          end(
            new HttpError(
              408,
              'RequestTimeoutError',
              `The stream was ended: its client read nothing for ${timeoutMs} ms (streamWriteTimeoutMs). Read the stream as it arrives.`,
            ),
          );
        }
      }
      wake = undefined;
      if (gone) return;
    }
    outgoing.end();
    if (ending && !outgoing.writableFinished) {
      // A client that reads nothing would hold the socket and what was written to it.
      const timer = setTimeout(() => outgoing.destroy(), TAIL_FLUSH_MS);
      timer.unref();
      outgoing.once('finish', () => clearTimeout(timer));
    }
  } catch (error) {
    // events.next() reports the source's errors in-stream; this is a failed write.
    outgoing.destroy(error as Error);
  } finally {
    forget?.();
    outgoing.off('close', onClose);
    outgoing.off('drain', onDrain);
  }
}
