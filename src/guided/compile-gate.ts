import { ProtocolError } from '../common/protocol-error.js';
import { ClientShares } from '../threads/client-shares.js';
import { yieldToEventLoop } from '../threads/yield.js';

/**
 * Where structured-output compiles wait their turn. A compile (the constraint turned into a
 * grammar, then XGrammar's compile of it) runs synchronously on the thread that asks for it,
 * tens of milliseconds for a short pattern, up to about a second at maxGrammarWork; the
 * audit's 100 concurrent ~130-byte guided_regex requests, each a new pattern, ran back to
 * back and held the event loop 11.4 s. Here they run one at a time, each after a yield to the
 * event loop, and after each the gate rests as long as the compile took (compiles take at
 * most half the thread: /health, the step loop and other requests run in between). The wait
 * is bounded: at most `maxQueued` compiles wait (past it a 503), each client at most
 * `maxQueuedPerClient` of them (past it a 429), and a compile still waiting after
 * `deadlineMs` is refused (503). Cached constraints never wait (compile-guide.ts).
 *
 * In workerd and the page (no worker threads) the compile runs on the thread that asks,
 * bounded in size by GuidedLimits and paced here. Under Node it runs on a guide thread
 * (guide-thread.ts), where XGrammar's compiled grammar and its matchers stay (it cannot
 * leave the WebAssembly memory it was built in): the gate still lets one compile run at a
 * time and keeps the shares, and rests only while every guide thread has guides alive.
 */
export interface CompileGateLimits {
  /** Compiles that may wait (running one included); past it a 503. */
  maxQueued: number;
  /** Of those, how many one client may have; past it a 429 (requests naming no client: only maxQueued). */
  maxQueuedPerClient: number;
  /** A compile not started after this long is refused (503). */
  deadlineMs: number;
}

export const DEFAULT_COMPILE_GATE_LIMITS: CompileGateLimits = { maxQueued: 64, maxQueuedPerClient: 8, deadlineMs: 10_000 };

interface Waiting {
  enqueuedAt: number;
  /** Starts the compile; settles when it has. */
  start(): Promise<void>;
  refuse(error: unknown): void;
}

export class CompileGate {
  private readonly queue: Waiting[] = [];
  private running = false;
  /**
   * Compiles accepted and not yet settled (waiting, or the one running), by client: the same
   * admission rule as the worker threads' queues (threads/client-shares.ts). Requests that
   * name no client (workerd, the page) count, but are not held to a share.
   */
  private readonly shares: ClientShares;

  constructor(
    private readonly limits: CompileGateLimits = DEFAULT_COMPILE_GATE_LIMITS,
    /**
     * Whether to rest after a compile as long as it took, asked after each one: always
     * when compiles run on this thread (half of it stays free). On Node's guide threads
     * only while every thread has guides alive (the next compile makes some wait: half
     * of that thread stays theirs); one at a time always, so a mask waits behind one
     * compile at most.
     */
    private readonly paced: boolean | (() => boolean) = true,
  ) {
    this.shares = new ClientShares({ maxTotal: limits.maxQueued, maxPerClient: limits.maxQueuedPerClient });
  }

  /** Compiles waiting or running. */
  get size(): number {
    return this.shares.total;
  }

  /** Runs `compile` in its turn; refused at once (429 / 503) when the client's share or the queue is full. */
  run<T>(client: string | undefined, compile: () => Promise<T>): Promise<T> {
    const { deadlineMs } = this.limits;
    const refusal = this.shares.refusal(client);
    if (refusal === 'total') {
      return Promise.reject(
        new ProtocolError('overloaded', `The server is busy compiling structured-output constraints: ${this.size} are waiting (maxGuidedCompileQueue). Retry later.`),
      );
    }
    if (refusal === 'client') {
      return Promise.reject(
        new ProtocolError(
          'rate_limited',
          `Too many structured-output constraints compiling for this client at once: ${this.shares.of(client)} (maxGuidedCompileQueuePerClient). Wait for them, or reuse a constraint (compiled ones are cached).`,
        ),
      );
    }
    this.shares.add(client);
    return new Promise<T>((resolve, reject) => {
      const done = () => this.shares.remove(client);
      this.queue.push({
        enqueuedAt: Date.now(),
        start: () =>
          compile()
            .then(resolve, reject)
            .finally(done),
        refuse: (error) => {
          done();
          reject(error);
        },
      });
      if (!this.running) void this.drain(deadlineMs);
    });
  }

  private async drain(deadlineMs: number): Promise<void> {
    this.running = true;
    try {
      for (;;) {
        // Whatever the event loop has (I/O, timers, model steps) runs before each compile.
        await yieldToEventLoop();
        const next = this.queue.shift();
        if (next === undefined) return;
        const waited = Date.now() - next.enqueuedAt;
        if (waited > deadlineMs) {
          next.refuse(
            new ProtocolError('overloaded', `The server is busy compiling structured-output constraints: this one waited ${waited} ms, past ${deadlineMs} ms. Retry later.`),
          );
          continue;
        }
        const startedAt = performance.now();
        await next.start();
        const took = performance.now() - startedAt;
        // Compiles take at most about half the thread while they queue.
        const rest = typeof this.paced === 'function' ? this.paced() : this.paced;
        if (rest && took > 1 && this.queue.length > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(took, 1000)));
      }
    } finally {
      this.running = false;
    }
  }
}
