/**
 * One worker_threads Worker that runs jobs one at a time, in order (Node only): the media
 * decoding thread and the tokenizer thread are both this. The thread starts with the first
 * job and does not keep the process alive while idle. A job whose signal aborts, or whose
 * deadline passes, terminates the thread (a decoder or a BPE call cannot be interrupted
 * otherwise), and the next job gets a fresh one. A thread that crashes or exits fails the
 * job it was running.
 */
import { Worker } from 'node:worker_threads';

/**
 * A worker module beside `base` (the caller's import.meta.url): the bundled .js beside the
 * server in a build; the .ts source under tsx or vitest (tsx registered in the thread).
 */
export function startModuleWorker(base: string, moduleName: string, workerData?: unknown): Worker {
  if (base.endsWith('.ts')) {
    // A worker does not inherit the parent's loaders: it registers tsx itself.
    const source = new URL(`./${moduleName}.ts`, base).href;
    const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(source)}); })`;
    return new Worker(bootstrap, { eval: true, workerData });
  }
  return new Worker(new URL(`./${moduleName}.js`, base), { workerData });
}

/** A reply from the thread: which job it answers. */
export interface JobReply {
  id: number;
}

export interface SerialJob<Reply extends JobReply> {
  /** Matches the reply (`reply.id`). */
  id: number;
  /** Posts the job to the thread. */
  send(worker: Worker): void;
  signal?: AbortSignal;
  /** Past this, the thread is terminated and the job fails with `timeoutError()`. */
  timeout?: { ms: number; error(): unknown };
  /** The job's result from its reply, or throws the job's error. */
  settle(reply: Reply): unknown;
  /** The error the job fails with when the thread crashes or exits under it. */
  crashed(error: Error): unknown;
}

interface Queued<Reply extends JobReply> {
  job: SerialJob<Reply>;
  resolve(result: unknown): void;
  reject(error: unknown): void;
}

export class SerialWorker<Reply extends JobReply> {
  private readonly queue: Queued<Reply>[] = [];
  private worker: Worker | null = null;
  private current: (Queued<Reply> & { finish(): void }) | null = null;

  /**
   * `start` makes a thread; `name` says which in errors ("the decoding thread"); `onStarted`
   * runs on each new thread before its first job (e.g. sends it what it loads).
   */
  constructor(
    private readonly start: () => Worker,
    private readonly name: string,
    private readonly onStarted?: (worker: Worker) => void,
  ) {}

  run(job: SerialJob<Reply>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queue.push({ job, resolve, reject });
      this.runNext();
    });
  }

  /** Stops the thread: the running job and the queued ones fail with `error()`. */
  async close(error: () => unknown): Promise<void> {
    for (const queued of this.queue.splice(0)) queued.reject(error());
    const running = this.current;
    this.current = null;
    running?.reject(error());
    const stopping = this.worker;
    this.worker = null;
    await stopping?.terminate();
  }

  private stopWorker(): void {
    const stopping = this.worker;
    this.worker = null;
    void stopping?.terminate();
  }

  private workerFor(): Worker {
    if (this.worker !== null) return this.worker;
    const started = this.start();
    // An idle thread must not keep the process alive.
    started.unref();
    started.on('message', (reply: Reply) => {
      const finished = this.current;
      if (finished === null || finished.job.id !== reply.id) return;
      finished.finish();
      let result: unknown;
      try {
        result = finished.job.settle(reply);
      } catch (error) {
        finished.reject(error);
        return;
      }
      finished.resolve(result);
    });
    const failed = (error: Error) => {
      if (this.worker === started) this.worker = null;
      const finished = this.current;
      if (finished === null) return;
      finished.finish();
      finished.reject(finished.job.crashed(error));
    };
    started.on('error', failed);
    started.on('exit', (code) => {
      if (this.worker === started) this.worker = null;
      if (this.current !== null && this.worker === null) failed(new Error(`${this.name} exited with code ${code}`));
    });
    this.onStarted?.(started);
    this.worker = started;
    return started;
  }

  private runNext(): void {
    if (this.current !== null) return;
    const next = this.queue.shift();
    if (next === undefined) return;
    const { job } = next;
    if (job.signal?.aborted) {
      next.reject(job.signal.reason);
      this.runNext();
      return;
    }
    const thread = this.workerFor();
    thread.ref();
    const onAbort = () => {
      finish();
      this.stopWorker();
      next.reject(job.signal!.reason);
    };
    const timer =
      job.timeout === undefined
        ? undefined
        : setTimeout(() => {
            finish();
            this.stopWorker();
            next.reject(job.timeout!.error());
          }, job.timeout.ms);
    const finish = () => {
      clearTimeout(timer);
      job.signal?.removeEventListener('abort', onAbort);
      thread.unref();
      this.current = null;
      queueMicrotask(() => this.runNext());
    };
    this.current = { ...next, finish };
    job.signal?.addEventListener('abort', onAbort, { once: true });
    job.send(thread);
  }
}
