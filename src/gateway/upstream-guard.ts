/**
 * The gateway distrusts its upstream (issue 41, family 11). An upstream is another server,
 * perhaps compromised or misconfigured; what it sends is bounded before the gateway holds it:
 *
 * - redirects are never followed (a 307 re-POSTed the client's prompt to another origin and
 *   relayed its answer): a 502 naming the redirect and where it pointed;
 * - a success must be JSON or an event stream (an HTML page was relayed as the answer);
 * - an error body is read up to MAX_UPSTREAM_ERROR_BODY_BYTES (a 2 GB error body was read whole);
 * - an event stream's lines are at most MAX_UPSTREAM_SSE_LINE_BYTES (a line without a newline
 *   was re-split on every chunk: quadratic time, +1.3 GB in 20 s); past it the stream ends
 *   with the documented error event.
 */
import { UpstreamError } from '../engine/remote/errors.js';

/** Bytes of an upstream's error body read (vLLM's are a few hundred). */
export const MAX_UPSTREAM_ERROR_BODY_BYTES = 64 * 1024;
/** Bytes of one line of an upstream's event stream (a chunk with n = 128 and 20 logprobs each is ~600 KB). */
export const MAX_UPSTREAM_SSE_LINE_BYTES = 4 * 1024 * 1024;

/** Throws the 502 for a redirect (the pool fetches with `redirect: 'manual'`). */
export function refuseRedirect(response: Response, upstream: string): void {
  const opaque = response.type === 'opaqueredirect';
  if (!opaque && (response.status < 300 || response.status > 399 || response.status === 304)) return;
  response.body?.cancel().catch(() => {});
  const location = response.headers.get('location');
  let where = '';
  if (location !== null) {
    try {
      where = ` to ${new URL(location, 'http://upstream.invalid').origin}`;
    } catch {
      where = ' to an invalid location';
    }
  }
  throw new UpstreamError(
    `The upstream "${upstream}" answered with a redirect (HTTP ${opaque ? '3xx' : response.status}${where}); the gateway does not follow redirects: set the upstream's URL to where it serves.`,
    opaque ? null : response.status,
  );
}

/** The media type of a Content-Type header, lower-cased, without parameters. */
function mediaType(contentType: string | null): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Throws the 502 for a success whose body is neither JSON nor an event stream. */
export function requireApiContentType(response: Response, upstream: string): void {
  const type = mediaType(response.headers.get('content-type'));
  if (type === 'application/json' || type === 'text/event-stream' || (type.startsWith('application/') && type.endsWith('+json'))) return;
  response.body?.cancel().catch(() => {});
  const shown = type === '' ? 'no Content-Type' : `Content-Type ${JSON.stringify(type.slice(0, 100))}`;
  throw new UpstreamError(`The upstream "${upstream}" answered HTTP ${response.status} with ${shown}; an API answer is application/json or text/event-stream.`, response.status);
}

/** An error body's text, at most `limit` bytes of it (the rest is cancelled, never read). */
export async function readBoundedText(response: Response, limit = MAX_UPSTREAM_ERROR_BODY_BYTES): Promise<string | null> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      total += value.byteLength;
      if (total > limit) {
        reader.cancel().catch(() => {});
        return null;
      }
    }
  } catch {
    return null;
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes);
}

/**
 * `body` with every line (bytes between line feeds) at most `maxLineBytes`: past it the
 * stream fails with an UpstreamError (the relay turns it into the error event) and the
 * upstream's body is cancelled. Nothing is read ahead of the client.
 */
export function capEventLines(body: ReadableStream<Uint8Array>, upstream: string, maxLineBytes = MAX_UPSTREAM_SSE_LINE_BYTES): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  /** Bytes of the line still open at the end of the last chunk. */
  let open = 0;
  const tooLong = (value: Uint8Array): boolean => {
    let start = 0;
    for (;;) {
      const feed = value.indexOf(0x0a, start);
      if (feed === -1) {
        open += value.byteLength - start;
        return open > maxLineBytes;
      }
      if (open + feed - start > maxLineBytes) return true;
      open = 0;
      start = feed + 1;
    }
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          return;
        }
        if (tooLong(value)) {
          reader.cancel().catch(() => {});
          controller.error(new UpstreamError(`The upstream "${upstream}" sent an event-stream line longer than ${maxLineBytes} bytes; the stream was cut there.`));
          return;
        }
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}
