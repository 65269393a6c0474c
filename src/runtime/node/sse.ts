/**
 * SSE under Node without web streams: an `sseResponse` body is written straight into
 * node:http's ServerResponse (strings, no TextEncoder, no ReadableStream reader loop in
 * @hono/node-server, whose first reads also wait a timer tick to guess a content-length).
 * Bytes, headers, backpressure and disconnect handling are those of the web path.
 */
import type { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { takeSseEvents, type SseEvents } from '../../http/sse.js';

type Fetch = (request: Request, env: { outgoing?: ServerResponse }) => Response | Promise<Response>;

/** Wraps an app's fetch so SSE responses are written to `env.outgoing` directly; everything else passes through. */
export function writingSseDirectly<F extends Fetch>(fetch: F): F {
  return (async (request: Request, env: { outgoing?: ServerResponse }) => {
    const response = await fetch(request, env);
    const outgoing = env?.outgoing;
    if (outgoing === undefined || outgoing.headersSent) return response;
    const events = takeSseEvents(response.body);
    if (events === undefined) return response;
    outgoing.writeHead(response.status, outgoingHeaders(response.headers));
    // The status line leaves now, as it does on the web path, before the first token.
    outgoing.flushHeaders();
    void pump(events, outgoing);
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

async function pump(events: SseEvents, outgoing: ServerResponse): Promise<void> {
  let gone = false;
  let wake: (() => void) | undefined;
  const onClose = () => {
    if (outgoing.writableFinished) return;
    gone = true;
    wake?.();
    void events.cancel();
  };
  const onDrain = () => wake?.();
  outgoing.on('close', onClose);
  outgoing.on('drain', onDrain);
  // A client that left while the request was being prepared (an abort within milliseconds)
  // closed the connection before these listeners existed: its 'close' has been and gone,
  // and a write would wait for a 'drain' that never comes, keeping the request open.
  if (outgoing.destroyed || outgoing.socket === null || outgoing.socket.destroyed) onClose();
  try {
    for (;;) {
      const event = await events.next();
      if (gone) return;
      if (event === undefined) break;
      // Backpressure: the next event is asked for only once the socket took this one.
      if (!outgoing.write(event) && !gone) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
      if (gone) return;
    }
    outgoing.end();
  } catch (error) {
    // events.next() reports the source's errors in-stream; this is a failed write.
    outgoing.destroy(error as Error);
  } finally {
    outgoing.off('close', onClose);
    outgoing.off('drain', onDrain);
  }
}
