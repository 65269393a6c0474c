/**
 * Image and audio decoding on a worker thread, one part at a time: the event loop goes on
 * serving (health checks, other requests' steps) while a large PNG inflates. Each part has
 * a deadline (MEDIA_DECODE_TIMEOUT_MS); past it, or when the part's request goes away,
 * the thread is terminated, which stops the decoder wherever it is, and the next part
 * gets a fresh one. Video is decoded where it was (ffmpeg is its own process already).
 * The same thread, queue and deadline run the thread's other tasks (`runTask`: an image
 * processor's resizing and normalising, an audio model's log-mel features;
 * media-decode-worker.ts).
 */
import { WorkerPool, startModuleWorker, type PoolLimits } from '../threads/worker-pool.js';
import { inlineMediaDecoder, type MediaDecoder, type MediaThreadTask } from './decode/media-decoder.js';
import { mediaError } from './errors.js';
import type { ThreadJob, ThreadReply } from './media-decode-worker.js';
import type { DecodedMedia, FetchedMedia } from './types.js';
import type { DecodeOptions } from './decode/index.js';

/** An error the thread's task threw, as it crossed back: its name and request parameter kept. */
function threadError(error: Extract<ThreadReply, { error: unknown }>['error']): Error {
  if (error.reason !== null) return mediaError(error.reason, error.message);
  return Object.assign(new Error(error.message), { name: error.name, param: error.param });
}

export interface WorkerMediaDecoder extends MediaDecoder {
  /** Stops the thread (pending parts are refused). */
  close(): Promise<void>;
}

export function createWorkerMediaDecoder(options: { timeoutMs: number; pool?: Partial<PoolLimits> }): WorkerMediaDecoder {
  // One thread, a bounded queue; a part's deadline counts from when it was queued (threads/worker-pool.ts).
  const thread = new WorkerPool<ThreadReply>(() => startModuleWorker(import.meta.url, 'media-decode-worker'), 'the decoding thread', { ...options.pool, size: 1 });
  let nextId = 1;

  /** `what` the job works on, for errors ("image", "PNG image"). */
  function enqueue(job: ThreadJob, transfer: ArrayBuffer[], what: { kind: string; format: string }, signal: AbortSignal | undefined, client: string | undefined): Promise<unknown> {
    const doing = job.task === 'decode' ? 'decoding' : 'processing';
    return thread.run({
      id: job.id,
      client,
      send: (worker) => worker.postMessage(job, transfer),
      signal,
      timeout: { ms: options.timeoutMs, error: () => mediaError('timeout', `${doing} the ${what.kind} took longer than ${options.timeoutMs} ms (MEDIA_DECODE_TIMEOUT_MS), counting the time it waited for the thread`) },
      settle: (reply) => {
        if ('result' in reply) return reply.result;
        throw threadError(reply.error);
      },
      crashed: (error) => mediaError('decode_failed', `the ${what.format.toUpperCase()} ${what.kind} could not be decoded (${error.message})`),
    });
  }

  return {
    decode(media: FetchedMedia, decodeOptions: DecodeOptions): Promise<DecodedMedia> {
      if (media.kind === 'video') return inlineMediaDecoder.decode(media, decodeOptions);
      // Functions cannot cross to the thread: it makes its own JPEG decoder (media-decode-worker.ts).
      const { signal, client, videoDecoder: _videoDecoder, videoSampling: _videoSampling, jpegDecoder: _jpegDecoder, ...plain } = decodeOptions;
      // A view of a larger buffer would clone the whole buffer into the thread.
      const whole = media.bytes.byteOffset === 0 && media.bytes.byteLength === media.bytes.buffer.byteLength;
      const job: ThreadJob = { id: nextId++, task: 'decode', media: { ...media, bytes: whole ? media.bytes : media.bytes.slice() }, options: plain };
      return enqueue(job, [], media, signal, client) as Promise<DecodedMedia>;
    },
    runTask(task: MediaThreadTask, signal?: AbortSignal, client?: string): Promise<unknown> {
      return enqueue({ id: nextId++, task: task.name, payload: task.payload }, task.transfer, { kind: task.kind, format: task.kind }, signal, client);
    },
    close: () => thread.close(() => mediaError('timeout', 'the media decoder was closed')),
  };
}
