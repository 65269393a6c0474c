/**
 * Node's tokenizer thread: a worker_threads Worker with its own copy of the tokenizer
 * (tokenizer-thread-worker.ts), started on the first text that needs it and sent the
 * tokenizer's files then, so a server that never sees such text never pays for it. One job
 * at a time, in order. A job whose signal aborts stops the thread (the next job gets a
 * fresh one): BPE cannot be interrupted otherwise. An idle thread does not keep the
 * process alive.
 *
 * The files are serialized once, when the thread is set up (at startup: ~0.1 s for a 32 K
 * vocabulary), into shared memory: starting a thread later costs the event loop nothing
 * (structured-cloning the parsed tokenizer.json on the first request held it ~90 ms).
 */
import { serialize } from 'node:v8';
import { Worker } from 'node:worker_threads';
import type { HfTokenizerSource, TokenizerThread, TokenizerThreadJob } from './tokenizer-thread.js';
import type { TokenizerThreadMessage, TokenizerThreadReply } from './tokenizer-thread-worker.js';

/** The bundled .js beside the server in a build; the .ts source under tsx or vitest (tsx registered in the thread). */
function startWorker(): Worker {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    const source = new URL('./tokenizer-thread-worker.ts', here).href;
    const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(source)}); })`;
    return new Worker(bootstrap, { eval: true });
  }
  return new Worker(new URL('./tokenizer-thread-worker.js', here));
}

interface Queued {
  job: TokenizerThreadJob;
  signal?: AbortSignal;
  resolve(ids: number[]): void;
  reject(error: unknown): void;
}

export function createNodeTokenizerThread(source: HfTokenizerSource): TokenizerThread {
  const serialized = serialize(source);
  const files = new Uint8Array(new SharedArrayBuffer(serialized.byteLength));
  files.set(serialized);
  const queue: Queued[] = [];
  let worker: Worker | null = null;
  let current: (Queued & { id: number; finish(): void }) | null = null;
  let nextId = 1;
  let closed = false;

  function stopWorker(): void {
    const stopping = worker;
    worker = null;
    void stopping?.terminate();
  }

  function workerFor(): Worker {
    if (worker !== null) return worker;
    const started = startWorker();
    started.unref();
    started.on('message', (reply: TokenizerThreadReply) => {
      if (current === null || current.id !== reply.id) return;
      const finished = current;
      finished.finish();
      if ('ids' in reply) finished.resolve(Array.from(reply.ids));
      else finished.reject(new Error(`tokenizing failed on the tokenizer thread: ${reply.error}`));
    });
    const failed = (error: Error) => {
      if (worker === started) worker = null;
      const finished = current;
      if (finished === null) return;
      finished.finish();
      finished.reject(new Error(`the tokenizer thread failed: ${error.message}`));
    };
    started.on('error', failed);
    started.on('exit', (code) => {
      if (worker === started) worker = null;
      if (current !== null && worker === null) failed(new Error(`it exited with code ${code}`));
    });
    // The files cross once per thread (structured clone); the thread builds its tokenizer before the first job.
    started.postMessage({ kind: 'load', files } satisfies TokenizerThreadMessage);
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
    const id = nextId++;
    const onAbort = () => {
      finish();
      stopWorker();
      next.reject(next.signal!.reason);
    };
    const finish = () => {
      next.signal?.removeEventListener('abort', onAbort);
      thread.unref();
      current = null;
      queueMicrotask(runNext);
    };
    current = { ...next, id, finish };
    next.signal?.addEventListener('abort', onAbort, { once: true });
    thread.postMessage({ kind: 'encode', id, ...next.job } satisfies TokenizerThreadMessage);
  }

  return {
    encode(job, signal) {
      if (closed) return Promise.reject(new Error('the tokenizer thread was closed'));
      return new Promise((resolve, reject) => {
        queue.push({ job, signal, resolve, reject });
        runNext();
      });
    },
    async close() {
      closed = true;
      for (const queued of queue.splice(0)) queued.reject(new Error('the tokenizer thread was closed'));
      const running = current;
      current = null;
      running?.reject(new Error('the tokenizer thread was closed'));
      const stopping = worker;
      worker = null;
      await stopping?.terminate();
    },
  };
}
