/**
 * Node's tokenizer thread: a worker_threads Worker with its own copy of the tokenizer
 * (tokenizer-thread-worker.ts), started on the first text that needs it and sent the
 * tokenizer's files then, so a server that never sees such text never pays for it. One job
 * at a time; waiting jobs are taken from clients in turn (one client's 64 long prompts delay
 * another's by one job, not 64) from a bounded queue, each under a deadline counted from when
 * it was queued (threads/worker-pool.ts). A job whose signal aborts, or that runs past its
 * deadline, stops the thread (the next job gets a fresh one): BPE cannot be interrupted
 * otherwise. An idle thread does not keep the process alive.
 *
 * The files are serialized once, when the thread is set up (at startup: ~0.1 s for a 32 K
 * vocabulary), into shared memory: starting a thread later costs the event loop nothing
 * (structured-cloning the parsed tokenizer.json on the first request held it ~90 ms).
 */
import { serialize } from 'node:v8';
import { ProtocolError } from '../common/protocol-error.js';
import { ThreadQueueFullError } from '../threads/queue-full-error.js';
import { WorkerPool, startModuleWorker } from '../threads/worker-pool.js';
import { DEFAULT_TOKENIZATION_MS, type HfTokenizerSource, type TokenizerThread, type TokenizerThreadSettings } from './tokenizer-thread.js';
import type { TokenizerThreadMessage, TokenizerThreadReply } from './tokenizer-thread-worker.js';

export function createNodeTokenizerThread(source: HfTokenizerSource, settings: TokenizerThreadSettings = {}): TokenizerThread {
  const { timeoutMs = DEFAULT_TOKENIZATION_MS, ...queue } = settings;
  const serialized = serialize(source);
  const files = new Uint8Array(new SharedArrayBuffer(serialized.byteLength));
  files.set(serialized);
  // The files cross once per thread (structured clone); the thread builds its tokenizer before the first job.
  // One thread: each holds a copy of the tokenizer. Its queue is bounded (threads/worker-pool.ts).
  const thread = new WorkerPool<TokenizerThreadReply>(
    () => startModuleWorker(import.meta.url, 'tokenizer-thread-worker'),
    'the tokenizer thread',
    { ...queue, size: 1 },
    (worker) => worker.postMessage({ kind: 'load', files } satisfies TokenizerThreadMessage),
  );
  let nextId = 1;
  let closed = false;

  return {
    encode(job, signal, client) {
      if (closed) return Promise.reject(new Error('the tokenizer thread was closed'));
      const id = nextId++;
      return thread.run({
        id,
        client,
        send: (worker) => worker.postMessage({ kind: 'encode', id, ...job } satisfies TokenizerThreadMessage),
        signal,
        timeout: { ms: timeoutMs, error: (started) => pastDeadline(timeoutMs, job.text.length, started) },
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

/**
 * A job past its deadline: one that never got the thread is the server's load (a 503 with
 * Retry-After, as a full queue); one that ran past it is a text too costly to tokenize (a 400,
 * as maxChatTemplateMs's renderings).
 */
function pastDeadline(timeoutMs: number, chars: number, started: boolean): Error {
  if (!started) {
    return new ThreadQueueFullError(
      `The server is busy: the prompt waited ${timeoutMs} ms for the tokenizer thread without starting (maxTokenizationMs); retry shortly.`,
      503,
      1,
    );
  }
  return new ProtocolError(
    'invalid_request',
    `Tokenizing the prompt (a text of ${chars} characters with long unbroken runs) took longer than ${timeoutMs} ms (maxTokenizationMs), counting the time it waited for the tokenizer thread.`,
  );
}
