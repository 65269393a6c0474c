/**
 * The media decoding thread (node-decode-worker.ts starts it): decodes one image or audio
 * part per message with the same decoders as the main thread, and hands the pixels or
 * samples back by transfer. Bundled beside the server as media-decode-worker.js.
 */
import { parentPort } from 'node:worker_threads';
import { decodeMedia, type DecodeOptions } from './decode/index.js';
import { MediaError } from './errors.js';
import { createNodeJpegDecoder } from './node-jpeg.js';
import type { DecodedMedia, FetchedMedia } from './types.js';

export interface DecodeJob {
  id: number;
  media: FetchedMedia;
  options: Omit<DecodeOptions, 'signal' | 'videoDecoder' | 'videoSampling' | 'jpegDecoder'>;
}

export type DecodeReply =
  | { id: number; decoded: DecodedMedia }
  | { id: number; error: { reason: MediaError['reason'] | null; message: string } };

function transferables(decoded: DecodedMedia): ArrayBuffer[] {
  if (decoded.kind === 'image') return [decoded.rgb.buffer as ArrayBuffer];
  if (decoded.kind === 'audio') return [decoded.samples.buffer as ArrayBuffer];
  return [];
}

// JPEG as PIL decodes it (sharp), in this thread as on the main one.
const jpegDecoder = createNodeJpegDecoder();

parentPort?.on('message', (job: DecodeJob) => {
  decodeMedia(job.media, { ...job.options, jpegDecoder }).then(
    (decoded) => parentPort!.postMessage({ id: job.id, decoded } satisfies DecodeReply, transferables(decoded)),
    (error: unknown) =>
      parentPort!.postMessage({
        id: job.id,
        error: { reason: error instanceof MediaError ? error.reason : null, message: error instanceof Error ? error.message : String(error) },
      } satisfies DecodeReply),
  );
});
