/**
 * Where decoding runs. Decoding an image or audio part takes from milliseconds to
 * seconds of CPU (a 40 MP PNG: ~3 s of inflating and unpacking), so a runtime with threads
 * runs it off the event loop (Node: node-decode-worker.ts), under a deadline. Elsewhere
 * (workerd, a browser tab's main thread) it runs here, after yielding, one part at a time,
 * so the requests and steps queued behind it get a turn between parts.
 */
import { yieldToEventLoop } from '../../threads/yield.js';
import type { DecodedMedia, FetchedMedia } from '../types.js';
import { decodeMedia, type DecodeOptions } from './index.js';

/**
 * Other work on decoded media for the decoding thread, named by the task its entry
 * (media-decode-worker.ts) knows: plain data in, plain data out, its buffers moved.
 */
export interface MediaThreadTask {
  name: 'process-images' | 'process-audio';
  payload: unknown;
  transfer: ArrayBuffer[];
  /** What it works on, for the timeout message ("image", "audio"). */
  kind: string;
}

export interface MediaDecoder {
  /** Throws MediaError (a timeout included), or the signal's reason once it aborts. */
  decode(media: FetchedMedia, options: DecodeOptions): Promise<DecodedMedia>;
  /**
   * Runs `task` on the decoding thread, queued with the decodes and under the same deadline
   * (a MediaError 'timeout' past it). Absent where decoding runs on the event loop. An error
   * the task throws comes back with its message, name and `param`.
   */
  runTask?(task: MediaThreadTask, signal?: AbortSignal, client?: string): Promise<unknown>;
}

/**
 * `decoder` with `client` named on every part and task it is given (a decoding thread takes
 * waiting work from clients in turn); the decoder itself where no client is known.
 */
export function decoderForClient(decoder: MediaDecoder, client: string | undefined): MediaDecoder {
  if (client === undefined) return decoder;
  const { runTask } = decoder;
  return {
    decode: (media, options) => decoder.decode(media, { ...options, client }),
    ...(runTask === undefined ? {} : { runTask: (task: MediaThreadTask, signal?: AbortSignal) => runTask.call(decoder, task, signal, client) }),
  };
}

/**
 * The buffers behind `views` to move to the thread, each once; a view of part of a buffer
 * is copied instead (moving it would move, and clone, the whole buffer).
 */
export function movableViews<T extends Uint8Array | Float32Array>(views: readonly T[]): { views: T[]; transfer: ArrayBuffer[] } {
  const transfer = new Set<ArrayBuffer>();
  const moved = views.map((view) => {
    const whole = view.byteOffset === 0 && view.byteLength === view.buffer.byteLength && view.buffer instanceof ArrayBuffer;
    if (!whole || transfer.has(view.buffer as ArrayBuffer)) return view.slice() as T;
    transfer.add(view.buffer as ArrayBuffer);
    return view;
  });
  return { views: moved, transfer: [...transfer] };
}

export const inlineMediaDecoder: MediaDecoder = {
  async decode(media, options) {
    await yieldToEventLoop();
    if (options.signal?.aborted) throw options.signal.reason;
    return decodeMedia(media, options);
  },
};
