/**
 * Deadlines on an upstream exchange, so that a hung server (accepts, never answers; or
 * stops mid-stream) cannot hold a client, its concurrency slot or the gateway forever.
 *
 * fetch() does not say when the TCP/TLS connection is up, only when the response's
 * headers are in, so the three deadlines are:
 *  - connect: until the status line and headers. Streamed requests get them as soon as
 *    the server admits the request (vLLM and llama.cpp at once); a non-streamed answer comes with its
 *    whole body, so for those the first-byte deadline bounds the headers too.
 *  - first byte: from sending the request until the first byte of the body (a stream's
 *    first event: prefill and queueing included).
 *  - idle: the longest silence between two body chunks once the body flows.
 * Each timeout is an UpstreamTimeoutError naming the upstream and the deadline.
 */
import { UpstreamTimeoutError } from '../engine/remote/errors.js';

export interface UpstreamTimeouts {
  connectMs: number;
  firstByteMs: number;
  idleMs: number;
}

/**
 * Connect is 30 s, not the few seconds a TCP connect needs: a server may hold a stream's
 * headers until it admits the request (this project's server did for >10 s with 64
 * streams on a loaded 2-core machine), and that wait counts here.
 */
export const DEFAULT_UPSTREAM_TIMEOUTS: UpstreamTimeouts = { connectMs: 30_000, firstByteMs: 120_000, idleMs: 60_000 };

/** Which deadline ran out; `name` is the upstream's configured name (never its URL). */
export function timeoutError(name: string, phase: 'connect' | 'first byte' | 'idle', ms: number): UpstreamTimeoutError {
  const what =
    phase === 'connect'
      ? `did not answer within its connect timeout (${ms} ms)`
      : phase === 'first byte'
        ? `sent no response body within its first-byte timeout (${ms} ms)`
        : `stopped sending for longer than its idle timeout (${ms} ms)`;
  return new UpstreamTimeoutError(`The upstream ${name} ${what}.`, name);
}

/**
 * `promise`, or `onTimeout()`'s error once `ms` have passed (the promise is left to
 * settle on its own: the caller aborts what it was waiting for).
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  if (!Number.isFinite(ms)) return promise;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(onTimeout()), Math.max(0, ms));
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/**
 * The rest of a body whose first chunk was already read, with the idle deadline on each
 * read. `onIdle` runs when it passes (the caller ejects the upstream and aborts the
 * exchange); the stream then errors with the timeout, which the relays turn into an
 * error event. Nothing is read ahead of the client (highWaterMark 0), and only time spent
 * waiting on the upstream counts: a client that reads slowly is not the upstream's
 * silence. One watchdog timer per stream, re-armed lazily, rather than a timer per chunk:
 * streams of thousands of small events pass through here.
 */
export function idleGuardedBody(
  first: Uint8Array | null,
  reader: ReadableStreamDefaultReader<Uint8Array>,
  idleMs: number,
  onIdle: () => Error,
): ReadableStream<Uint8Array> {
  let pending = first;
  let waitingSince: number | null = null;
  let idle: Error | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let over = false;
  const watch = (delay: number) => {
    timer = setTimeout(() => {
      timer = null;
      if (over) return;
      if (waitingSince === null) return watch(idleMs);
      const silent = Date.now() - waitingSince;
      if (silent < idleMs) return watch(idleMs - silent);
      idle = onIdle();
      reader.cancel(idle).catch(() => {});
    }, Math.max(1, delay));
  };
  const stop = () => {
    over = true;
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  if (Number.isFinite(idleMs)) watch(idleMs);
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (pending !== null) {
          controller.enqueue(pending);
          pending = null;
          return;
        }
        let chunk: ReadableStreamReadResult<Uint8Array>;
        waitingSince = Date.now();
        try {
          chunk = await reader.read();
        } catch (error) {
          stop();
          controller.error(idle ?? error);
          return;
        } finally {
          waitingSince = null;
        }
        if (idle !== null) {
          stop();
          controller.error(idle);
        } else if (chunk.done) {
          stop();
          controller.close();
        } else {
          controller.enqueue(chunk.value);
        }
      },
      cancel: (reason) => {
        stop();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
