/**
 * A few worker_threads Workers that run jobs (Node only): the chat template, tokenizer and
 * media decoding threads are each one of these. Budgets by construction (issue 41, family 4):
 *
 * - the queue is bounded: past `maxQueued` waiting jobs a job is refused at once
 *   (ThreadQueueFullError, a 503 with Retry-After), and one client may have at most
 *   `maxQueuedPerClient` of them waiting (a 429): one client cannot fill the queue;
 * - it is fair per client: a free thread takes the next job of the client whose last job
 *   started longest ago (round robin between clients), not the oldest job, so three slow jobs from one client delay another
 *   client's job by at most one job, not three; and while others wait no client holds
 *   every thread (with two or more);
 * - a job's deadline counts from when it was queued: time spent waiting is part of it;
 * - the pool has `size` threads, each started with its first job; an idle thread does not
 *   keep the process alive.
 *
 * A job whose signal aborts, or whose deadline passes, while it runs terminates its thread
 * (a rendering, a decoder or a BPE call cannot be interrupted otherwise); that thread
 * starts afresh with its next job. A thread that crashes or exits fails the job it ran.
 */
import { Worker } from 'node:worker_threads';
import { ClientShares } from './client-shares.js';
import { ThreadQueueFullError } from './queue-full-error.js';

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

export interface PoolJob<Reply extends JobReply> {
  /** Matches the reply (`reply.id`). */
  id: number;
  /** Who asked (an address, a key: the caller decides): jobs are taken from clients in turn. Absent: one shared client. */
  client?: string;
  /** Posts the job to the thread. */
  send(worker: Worker): void;
  signal?: AbortSignal;
  /**
   * Past this many ms after the job was queued, it fails with `error(started)` (its thread
   * stopped if it runs): `started` false when it never got a thread (the server is busy), true
   * when it ran past the deadline.
   */
  timeout?: { ms: number; error(started: boolean): unknown };
  /** The job's result from its reply, or throws the job's error. */
  settle(reply: Reply): unknown;
  /** The error the job fails with when the thread crashes or exits under it. */
  crashed(error: Error): unknown;
}

export interface PoolLimits {
  /** Threads (at least 1). */
  size: number;
  /** Jobs waiting for a thread, all clients together. */
  maxQueued: number;
  /** Jobs one client may have waiting (jobs that name no client, as under workerd or internal ones, share only maxQueued). */
  maxQueuedPerClient: number;
}

/** One thread and one waiting job a client may have with no setting: a pool that only keeps work off the loop. */
export const DEFAULT_POOL_LIMITS: PoolLimits = { size: 1, maxQueued: 64, maxQueuedPerClient: 16 };

interface Pending<Reply extends JobReply> {
  job: PoolJob<Reply>;
  client: string;
  resolve(result: unknown): void;
  reject(error: unknown): void;
  /** Clears the deadline and the abort listener. */
  release(): void;
  /** The slot running it, once it runs. */
  slot: Slot | null;
}

interface Slot {
  worker: Worker | null;
  current: Pending<JobReply> | null;
}

const SHARED_CLIENT = '';

export class WorkerPool<Reply extends JobReply> {
  /** Waiting jobs by client, in the order clients first queued. */
  private readonly waiting = new Map<string, Pending<Reply>[]>();
  /** When each client with work here last had a job started (a counter): the least recent goes next. */
  private readonly served = new Map<string, number>();
  private turn = 0;
  /** Waiting jobs counted against maxQueued and each client's maxQueuedPerClient (the same rule as the compile gate's). */
  private readonly shares: ClientShares;
  private readonly slots: Slot[];
  private readonly limits: PoolLimits;

  /**
   * `start` makes a thread; `name` says which in errors ("the decoding thread"); `onStarted`
   * runs on each new thread before its first job (e.g. sends it what it loads).
   */
  constructor(
    private readonly start: () => Worker,
    private readonly name: string,
    limits: Partial<PoolLimits> = {},
    private readonly onStarted?: (worker: Worker) => void,
  ) {
    this.limits = { ...DEFAULT_POOL_LIMITS, ...limits };
    this.limits.size = Math.max(1, Math.floor(this.limits.size));
    this.shares = new ClientShares({ maxTotal: this.limits.maxQueued, maxPerClient: this.limits.maxQueuedPerClient });
    this.slots = Array.from({ length: this.limits.size }, () => ({ worker: null, current: null }));
  }

  /** Jobs waiting for a thread (all clients). */
  get waitingJobs(): number {
    return this.shares.total;
  }

  run(job: PoolJob<Reply>): Promise<unknown> {
    if (job.signal?.aborted) return Promise.reject(job.signal.reason);
    const client = job.client ?? SHARED_CLIENT;
    // Anything already waiting goes first: the job waits too (and counts against the bounds).
    const mustWait = this.shares.total > 0 || this.freeSlot(client) === null;
    const refusal = mustWait ? this.shares.refusal(job.client) : null;
    if (refusal === 'total') {
      return Promise.reject(
        new ThreadQueueFullError(`The server is busy: ${this.shares.total} jobs already wait for ${this.name} (at most ${this.limits.maxQueued}); retry shortly.`, 503, 1),
      );
    }
    if (refusal === 'client') {
      return Promise.reject(
        new ThreadQueueFullError(
          `Too many requests from this client wait for ${this.name}: ${this.shares.of(job.client)} already (at most ${this.limits.maxQueuedPerClient} a client); retry once they are answered.`,
          429,
          1,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      const pending: Pending<Reply> = { job, client, resolve, reject, release: () => {}, slot: null };
      const fail = (error: unknown) => {
        pending.release();
        if (pending.slot === null) this.unqueue(pending);
        else this.stopSlot(pending.slot);
        reject(error);
      };
      const onAbort = () => fail(job.signal!.reason);
      // The deadline counts from now: waiting for a thread is part of it.
      const timer = job.timeout === undefined ? undefined : setTimeout(() => fail(job.timeout!.error(pending.slot !== null)), job.timeout.ms);
      job.signal?.addEventListener('abort', onAbort, { once: true });
      pending.release = () => {
        clearTimeout(timer);
        job.signal?.removeEventListener('abort', onAbort);
      };
      const clientQueue = this.waiting.get(client);
      if (clientQueue === undefined) this.waiting.set(client, [pending]);
      else clientQueue.push(pending);
      this.shares.add(job.client);
      this.dispatch();
    });
  }

  /** Stops the threads: running and waiting jobs fail with `error()`. */
  async close(error: () => unknown): Promise<void> {
    for (const queue of this.waiting.values()) {
      for (const pending of queue) {
        pending.release();
        pending.reject(error());
      }
    }
    this.waiting.clear();
    this.served.clear();
    this.shares.clear();
    const stopping: Promise<number>[] = [];
    for (const slot of this.slots) {
      const running = slot.current;
      slot.current = null;
      if (running !== null) {
        running.release();
        running.reject(error());
      }
      if (slot.worker !== null) stopping.push(slot.worker.terminate());
      slot.worker = null;
    }
    await Promise.all(stopping);
  }

  /**
   * A thread `client` may start on now: a free one, unless taking it would leave no thread for
   * other clients' waiting jobs (with two or more threads, one client never holds them all
   * while others wait).
   */
  private freeSlot(client: string): Slot | null {
    const free = this.slots.find((slot) => slot.current === null);
    if (free === undefined) return null;
    if (this.slots.length < 2) return free;
    const othersWait = [...this.waiting.keys()].some((other) => other !== client);
    if (!othersWait) return free;
    const held = this.slots.filter((slot) => slot.current?.client === client).length;
    return held < this.slots.length - 1 ? free : null;
  }

  private unqueue(pending: Pending<Reply>): void {
    const queue = this.waiting.get(pending.client);
    const at = queue?.indexOf(pending) ?? -1;
    if (queue === undefined || at < 0) return;
    queue.splice(at, 1);
    this.shares.remove(pending.job.client);
    if (queue.length === 0) this.waiting.delete(pending.client);
    this.forgetIdle(pending.client);
  }

  /** Starts waiting jobs on free threads, taking clients in turn: the one whose last job started longest ago first. */
  private dispatch(): void {
    for (;;) {
      let next: { client: string; queue: Pending<Reply>[]; slot: Slot; served: number } | null = null;
      for (const [client, queue] of this.waiting) {
        const served = this.served.get(client) ?? 0;
        if (next !== null && served >= next.served) continue;
        const slot = this.freeSlot(client);
        if (slot !== null) next = { client, queue, slot, served };
      }
      if (next === null) return;
      const pending = next.queue.shift()!;
      this.shares.remove(pending.job.client);
      if (next.queue.length === 0) this.waiting.delete(next.client);
      this.begin(next.slot, pending);
    }
  }

  /** Forgets when a client was served once it has nothing here (the map stays as small as the work). */
  private forgetIdle(client: string): void {
    if (this.waiting.has(client) || this.slots.some((slot) => slot.current?.client === client)) return;
    this.served.delete(client);
  }

  private begin(slot: Slot, pending: Pending<Reply>): void {
    const thread = this.workerFor(slot);
    thread.ref();
    pending.slot = slot;
    this.served.set(pending.client, ++this.turn);
    slot.current = pending as unknown as Pending<JobReply>;
    pending.job.send(thread);
  }

  /** The running job is done (answered, failed, or its thread stopped): the slot takes the next. */
  private finish(slot: Slot): void {
    const done = slot.current;
    if (done === null) return;
    done.release();
    slot.current = null;
    slot.worker?.unref();
    this.forgetIdle(done.client);
    queueMicrotask(() => this.dispatch());
  }

  private stopSlot(slot: Slot): void {
    const stopping = slot.worker;
    slot.worker = null;
    this.finish(slot);
    void stopping?.terminate();
  }

  private workerFor(slot: Slot): Worker {
    if (slot.worker !== null) return slot.worker;
    const started = this.start();
    // An idle thread must not keep the process alive.
    started.unref();
    started.on('message', (reply: Reply) => {
      const finished = slot.current as Pending<Reply> | null;
      if (slot.worker !== started || finished === null || finished.job.id !== reply.id) return;
      this.finish(slot);
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
      if (slot.worker !== started) return;
      slot.worker = null;
      const finished = slot.current as Pending<Reply> | null;
      if (finished === null) return;
      this.finish(slot);
      finished.reject(finished.job.crashed(error));
    };
    started.on('error', failed);
    started.on('exit', (code) => failed(new Error(`${this.name} exited with code ${code}`)));
    this.onStarted?.(started);
    slot.worker = started;
    return started;
  }
}
