/**
 * The worker-thread pool (src/threads/worker-pool.ts) on real threads whose jobs hold them a
 * known time: taken from clients in turn, bounded, deadlines from enqueue, no client holding
 * every thread while another waits.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ThreadQueueFullError } from '../../src/threads/queue-full-error.js';
import { WorkerPool, startModuleWorker, type PoolLimits } from '../../src/threads/worker-pool.js';

type Reply = { id: number; tag: string };
const pools: WorkerPool<Reply>[] = [];
afterEach(async () => {
  for (const pool of pools.splice(0)) await pool.close(() => new Error('closed'));
});

function pool(limits: Partial<PoolLimits>): WorkerPool<Reply> {
  const made = new WorkerPool<Reply>(() => startModuleWorker(import.meta.url, 'fixtures/sleep-worker'), 'the test thread', limits);
  pools.push(made);
  return made;
}

let nextId = 1;
/** A job holding its thread `ms`, resolving with its tag; finished tags are pushed to `order`. */
function job(on: WorkerPool<Reply>, client: string | undefined, tag: string, ms: number, order: string[], timeoutMs?: number): Promise<unknown> {
  const id = nextId++;
  return on
    .run({
      id,
      client,
      send: (worker) => worker.postMessage({ id, ms, tag }),
      timeout: timeoutMs === undefined ? undefined : { ms: timeoutMs, error: (started) => new Error(`${tag} timed out ${started ? 'running' : 'waiting'}`) },
      settle: (reply) => reply.tag,
      crashed: (error) => error,
    })
    .then((tag) => (order.push(tag as string), tag));
}

describe('WorkerPool', () => {
  it('takes waiting jobs from clients in turn, not in arrival order', async () => {
    const threads = pool({ size: 1, maxQueued: 16, maxQueuedPerClient: 8 });
    const order: string[] = [];
    // Warm the thread so start-up does not skew the order.
    await job(threads, 'x', 'warm', 1, []);
    const jobs = [job(threads, 'a', 'a1', 100, order), job(threads, 'a', 'a2', 20, order), job(threads, 'a', 'a3', 20, order), job(threads, 'b', 'b1', 20, order)];
    await Promise.all(jobs);
    // a1 was running; then b's turn comes before a's second and third.
    expect(order).toEqual(['a1', 'b1', 'a2', 'a3']);
  });

  it('with two threads, one client does not hold both while another waits', async () => {
    const threads = pool({ size: 2, maxQueued: 16, maxQueuedPerClient: 8 });
    await Promise.all([job(threads, 'x', 'warm', 1, []), job(threads, 'y', 'warm', 1, [])]);
    const order: string[] = [];
    const started = performance.now();
    const slow = [job(threads, 'a', 'a1', 600, order), job(threads, 'a', 'a2', 600, order), job(threads, 'a', 'a3', 600, order)];
    await new Promise((resolve) => setTimeout(resolve, 50));
    await job(threads, 'b', 'b1', 10, order);
    const waited = performance.now() - started;
    await Promise.all(slow);
    // b waited for one of a's running jobs (600 ms), not for a3 as well.
    expect(order.indexOf('b1')).toBeLessThan(order.indexOf('a3'));
    expect(waited).toBeLessThan(1150);
  });

  it('bounds the queue: 429 past a client share, 503 past the total, at once', async () => {
    const threads = pool({ size: 1, maxQueued: 3, maxQueuedPerClient: 2 });
    const order: string[] = [];
    const running = job(threads, 'a', 'a1', 200, order);
    const waiting = [job(threads, 'a', 'a2', 1, order), job(threads, 'a', 'a3', 1, order)];
    const share = await job(threads, 'a', 'a4', 1, order).catch((error) => error);
    expect(share).toBeInstanceOf(ThreadQueueFullError);
    expect(share).toMatchObject({ status: 429, retryAfterSeconds: 1 });
    waiting.push(job(threads, 'b', 'b1', 1, order));
    const total = await job(threads, 'c', 'c1', 1, order).catch((error) => error);
    expect(total).toMatchObject({ status: 503, retryAfterSeconds: 1 });
    expect(threads.waitingJobs).toBe(3);
    await Promise.all([running, ...waiting]);
  });

  it('counts a deadline from enqueue: a job that waited past it fails without running', async () => {
    const threads = pool({ size: 1 });
    await job(threads, 'x', 'warm', 1, []);
    const order: string[] = [];
    const running = job(threads, 'a', 'a1', 400, order);
    const started = performance.now();
    const late = await job(threads, 'b', 'b1', 1, order, 150).catch((error) => error);
    // It never had the thread: the error says so (a tokenizer text's 503, not its 400).
    expect((late as Error).message).toBe('b1 timed out waiting');
    expect(performance.now() - started).toBeLessThan(380);
    await running;
    expect(order).toEqual(['a1']);
    expect(threads.waitingJobs).toBe(0);
  });

  it('a running job past its deadline stops its thread; the next job gets a fresh one', async () => {
    const threads = pool({ size: 1 });
    const order: string[] = [];
    const stuck = await job(threads, 'a', 'a1', 5000, order, 300).catch((error) => error);
    expect((stuck as Error).message).toBe('a1 timed out running');
    expect(await job(threads, 'b', 'b1', 1, order)).toBe('b1');
    expect(order).toEqual(['b1']);
  });
});
