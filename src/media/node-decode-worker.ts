/**
 * Image and audio decoding on a worker thread, one part at a time: the event loop goes on
 * serving (health checks, other requests' steps) while a large PNG inflates. Each part has
 * a deadline (MEDIA_DECODE_TIMEOUT_MS); past it, or when the part's request goes away,
 * the thread is terminated, which stops the decoder wherever it is, and the next part
 * gets a fresh one. Video is decoded where it was (ffmpeg is its own process already).
 * The same thread, queue and deadline run the thread's other tasks (`runTask`: an image
 * processor's resizing and normalising, media-decode-worker.ts).
 */
import { Worker } from 'node:worker_threads';
import { inlineMediaDecoder, type MediaDecoder, type MediaThreadTask } from './decode/media-decoder.js';
import { mediaError } from './errors.js';
import type { ThreadJob, ThreadReply } from './media-decode-worker.js';
import type { DecodedMedia, FetchedMedia } from './types.js';
import type { DecodeOptions } from './decode/index.js';

interface Queued {
  job: ThreadJob;
  transfer: ArrayBuffer[];
  /** What the job works on, for errors ("image", "PNG image"). */
  what: { kind: string; format: string };
  signal?: AbortSignal;
  resolve(result: unknown): void;
  reject(error: unknown): void;
}

/** An error the thread's task threw, as it crossed back: its name and request parameter kept. */
function threadError(error: Extract<ThreadReply, { error: unknown }>['error']): Error {
  if (error.reason !== null) return mediaError(error.reason, error.message);
  return Object.assign(new Error(error.message), { name: error.name, param: error.param });
}


/** The bundled .js beside the server in a build; the .ts source under tsx or vitest (tsx registered in the thread). */
function startWorker(): Worker {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    const source = new URL('./media-decode-worker.ts', here).href;
    const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(source)}); })`;
    return new Worker(bootstrap, { eval: true });
  }
  return new Worker(new URL('./media-decode-worker.js', here));
}

export interface WorkerMediaDecoder extends MediaDecoder {
  /** Stops the thread (pending parts are refused). */
  close(): Promise<void>;
}

export function createWorkerMediaDecoder(options: { timeoutMs: number }): WorkerMediaDecoder {
  const queue: Queued[] = [];
  let worker: Worker | null = null;
  let current: (Queued & { done(): void }) | null = null;
  let nextId = 1;

  function stopWorker(): void {
    const stopping = worker;
    worker = null;
    void stopping?.terminate();
  }

  function workerFor(): Worker {
    if (worker !== null) return worker;
    const started = startWorker();
    // An idle decoding thread must not keep the process alive.
    started.unref();
    started.on('message', (reply: ThreadReply) => {
      if (current === null || current.job.id !== reply.id) return;
      const finished = current;
      finished.done();
      if ('result' in reply) finished.resolve(reply.result);
      else finished.reject(threadError(reply.error));
    });
    const failed = (error: Error) => {
      if (worker === started) worker = null;
      const finished = current;
      if (finished === null) return;
      finished.done();
      finished.reject(mediaError('decode_failed', `the ${finished.what.format.toUpperCase()} ${finished.what.kind} could not be decoded (${error.message})`));
    };
    started.on('error', failed);
    started.on('exit', (code) => {
      if (worker === started) worker = null;
      if (current !== null && worker === null) failed(new Error(`the decoding thread exited with code ${code}`));
    });
    worker = started;
    return started;
  }

  function runNext(): void {
    if (current !== null) return;
    const next = queue.shift();
    if (next === undefined) return;
    if (next.signal?.aborted) {
      next.reject(next.signal.reason);
      runNext();
      return;
    }
    const thread = workerFor();
    thread.ref();
    const onAbort = () => {
      finish();
      stopWorker();
      next.reject(next.signal!.reason);
    };
    const timer = setTimeout(() => {
      finish();
      stopWorker();
      const doing = next.job.task === 'decode' ? 'decoding' : 'processing';
      next.reject(mediaError('timeout', `${doing} the ${next.what.kind} took longer than ${options.timeoutMs} ms (MEDIA_DECODE_TIMEOUT_MS)`));
    }, options.timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      next.signal?.removeEventListener('abort', onAbort);
      thread.unref();
      current = null;
      queueMicrotask(runNext);
    };
    current = { ...next, done: finish };
    next.signal?.addEventListener('abort', onAbort, { once: true });
    thread.postMessage(next.job, next.transfer);
  }

  function enqueue(job: ThreadJob, transfer: ArrayBuffer[], what: Queued['what'], signal: AbortSignal | undefined): Promise<unknown> {
    return new Promise((resolve, reject) => {
      queue.push({ job, transfer, what, signal, resolve, reject });
      runNext();
    });
  }

  return {
    decode(media: FetchedMedia, decodeOptions: DecodeOptions): Promise<DecodedMedia> {
      if (media.kind === 'video') return inlineMediaDecoder.decode(media, decodeOptions);
      // Functions cannot cross to the thread: it makes its own JPEG decoder (media-decode-worker.ts).
      const { signal, videoDecoder: _videoDecoder, videoSampling: _videoSampling, jpegDecoder: _jpegDecoder, ...plain } = decodeOptions;
      // A view of a larger buffer would clone the whole buffer into the thread.
      const whole = media.bytes.byteOffset === 0 && media.bytes.byteLength === media.bytes.buffer.byteLength;
      const job: ThreadJob = { id: nextId++, task: 'decode', media: { ...media, bytes: whole ? media.bytes : media.bytes.slice() }, options: plain };
      return enqueue(job, [], media, signal) as Promise<DecodedMedia>;
    },
    runTask(task: MediaThreadTask, signal?: AbortSignal): Promise<unknown> {
      return enqueue({ id: nextId++, task: task.name, payload: task.payload }, task.transfer, { kind: task.kind, format: task.kind }, signal);
    },
    async close() {
      for (const queued of queue.splice(0)) queued.reject(mediaError('timeout', 'the media decoder was closed'));
      const running = current;
      current = null;
      running?.reject(mediaError('timeout', 'the media decoder was closed'));
      const stopping = worker;
      worker = null;
      await stopping?.terminate();
    },
  };
}
