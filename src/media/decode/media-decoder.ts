/**
 * Where decoding runs. Decoding an image or audio part takes from milliseconds to
 * seconds of CPU (a 40 MP PNG: ~3 s of inflating and unpacking), so a runtime with threads
 * runs it off the event loop (Node: node-decode-worker.ts), under a deadline. Elsewhere
 * (workerd, a browser tab's main thread) it runs here, after yielding, one part at a time,
 * so the requests and steps queued behind it get a turn between parts.
 */
import { yieldToEventLoop } from '../../engine/yield.js';
import type { DecodedMedia, FetchedMedia } from '../types.js';
import { decodeMedia, type DecodeOptions } from './index.js';

export interface MediaDecoder {
  /** Throws MediaError (a timeout included), or the signal's reason once it aborts. */
  decode(media: FetchedMedia, options: DecodeOptions): Promise<DecodedMedia>;
}

export const inlineMediaDecoder: MediaDecoder = {
  async decode(media, options) {
    await yieldToEventLoop();
    if (options.signal?.aborted) throw options.signal.reason;
    return decodeMedia(media, options);
  },
};
