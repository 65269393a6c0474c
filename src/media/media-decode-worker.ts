/**
 * The media decoding thread (node-decode-worker.ts starts it): decodes one image or audio
 * part per message with the same decoders as the main thread, and hands the pixels or
 * samples back by transfer. Bundled beside the server as media-decode-worker.js.
 * It also runs the tasks of MediaThreadTask, a vision model's image processing (resize,
 * tiles, normalise) and an audio model's log-mel features, whose code lives with the
 * model in src/multimodal: this entry is the one place that puts the two together in the
 * thread.
 */
import { parentPort } from 'node:worker_threads';
import { runProcessAudioTask } from '../multimodal/audio-processing.js';
import { runProcessImagesTask } from '../multimodal/image-processing.js';
import { decodeMedia, type DecodeOptions } from './decode/index.js';
import type { MediaThreadTask } from './decode/media-decoder.js';
import { MediaError } from './errors.js';
import { createNodeJpegDecoder } from './node-jpeg.js';
import type { DecodedMedia, FetchedMedia } from './types.js';

export type ThreadJob =
  | {
      id: number;
      task: 'decode';
      media: FetchedMedia;
      options: Omit<DecodeOptions, 'signal' | 'videoDecoder' | 'videoSampling' | 'jpegDecoder'>;
    }
  | { id: number; task: MediaThreadTask['name']; payload: unknown };

export type ThreadReply =
  | { id: number; result: unknown }
  | { id: number; error: { reason: MediaError['reason'] | null; message: string; name: string; param: string | null } };

function transferables(decoded: DecodedMedia): ArrayBuffer[] {
  if (decoded.kind === 'image') return [decoded.rgb.buffer as ArrayBuffer];
  if (decoded.kind === 'audio') return [decoded.samples.buffer as ArrayBuffer];
  return [];
}

// JPEG as PIL decodes it (sharp), in this thread as on the main one.
const jpegDecoder = createNodeJpegDecoder();

async function run(job: ThreadJob): Promise<{ result: unknown; transfer: ArrayBuffer[] }> {
  if (job.task === 'decode') {
    const decoded = await decodeMedia(job.media, { ...job.options, jpegDecoder });
    return { result: decoded, transfer: transferables(decoded) };
  }
  return job.task === 'process-audio' ? runProcessAudioTask(job.payload) : runProcessImagesTask(job.payload);
}

parentPort?.on('message', (job: ThreadJob) => {
  run(job).then(
    ({ result, transfer }) => {
      const reply = { id: job.id, result } satisfies ThreadReply;
      try {
        parentPort!.postMessage(reply, transfer);
      } catch (error) {
        // sharp's pixels live in memory the addon allocated, which Node 24 refuses to transfer
        // (DataCloneError; Node 20 moved them): such a reply goes back as a copy.
        if ((error as Error)?.name !== 'DataCloneError') throw error;
        parentPort!.postMessage(reply);
      }
    },
    (error: unknown) => {
      const param = (error as { param?: unknown })?.param;
      parentPort!.postMessage({
        id: job.id,
        error: {
          reason: error instanceof MediaError ? error.reason : null,
          message: error instanceof Error ? error.message : String(error),
          name: error instanceof Error ? error.name : 'Error',
          param: typeof param === 'string' ? param : null,
        },
      } satisfies ThreadReply);
    },
  );
});
