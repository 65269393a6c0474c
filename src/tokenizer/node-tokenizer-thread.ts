/**
 * Node's tokenizer thread: a worker_threads Worker with its own copy of the tokenizer
 * (tokenizer-thread-worker.ts), started on the first text that needs it and sent the
 * tokenizer's files then, so a server that never sees such text never pays for it. One job
 * at a time, in order. A job whose signal aborts stops the thread (the next job gets a
 * fresh one): BPE cannot be interrupted otherwise. Jobs wait in a bounded queue. An idle thread does not keep the
 * process alive.
 *
 * The files are serialized once, when the thread is set up (at startup: ~0.1 s for a 32 K
 * vocabulary), into shared memory: starting a thread later costs the event loop nothing
 * (structured-cloning the parsed tokenizer.json on the first request held it ~90 ms).
 */
import { serialize } from 'node:v8';
import { WorkerPool, startModuleWorker, type PoolLimits } from '../threads/worker-pool.js';
import type { HfTokenizerSource, TokenizerThread } from './tokenizer-thread.js';
import type { TokenizerThreadMessage, TokenizerThreadReply } from './tokenizer-thread-worker.js';

export function createNodeTokenizerThread(source: HfTokenizerSource, limits: Partial<PoolLimits> = {}): TokenizerThread {
  const serialized = serialize(source);
  const files = new Uint8Array(new SharedArrayBuffer(serialized.byteLength));
  files.set(serialized);
  // The files cross once per thread (structured clone); the thread builds its tokenizer before the first job.
  // One thread: each holds a copy of the tokenizer. Its queue is bounded (threads/worker-pool.ts).
  const thread = new WorkerPool<TokenizerThreadReply>(
    () => startModuleWorker(import.meta.url, 'tokenizer-thread-worker'),
    'the tokenizer thread',
    { ...limits, size: 1 },
    (worker) => worker.postMessage({ kind: 'load', files } satisfies TokenizerThreadMessage),
  );
  let nextId = 1;
  let closed = false;

  return {
    encode(job, signal) {
      if (closed) return Promise.reject(new Error('the tokenizer thread was closed'));
      const id = nextId++;
      return thread.run({
        id,
        send: (worker) => worker.postMessage({ kind: 'encode', id, ...job } satisfies TokenizerThreadMessage),
        signal,
        settle: (reply) => {
          if ('ids' in reply) return Array.from(reply.ids);
          throw new Error(`tokenizing failed on the tokenizer thread: ${reply.error}`);
        },
        crashed: (error) => new Error(`the tokenizer thread failed: ${error.message}`),
      }) as Promise<number[]>;
    },
    close() {
      closed = true;
      return thread.close(() => new Error('the tokenizer thread was closed'));
    },
  };
}
