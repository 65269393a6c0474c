import type { Worker } from 'node:worker_threads';
import { ProtocolError } from '../common/protocol-error.js';
import { startModuleWorker } from '../threads/worker-pool.js';
import type { GrammarThread } from './compile-guide.js';
import type { Guide, GuideFactory } from './guide.js';
import { MASK_FAILED, MASK_PENDING, SLOT_MASK_OFFSET, SLOT_STATE, type FromGuideThread, type ToGuideThread } from './guide-thread-protocol.js';
import type { GuidedLimits } from './limits.js';
import { guidedParam, type GuidedDecodingRequest } from './request.js';
import type { TokenVocabulary } from './token-vocabulary.js';
import { UTF8_BOUNDARY, UTF8_INVALID } from './utf8.js';
import { Utf8MaskFilter } from './utf8-filter.js';
import { applyMask, firstAllowed, maskAllows } from './allowed-mask.js';

/**
 * Structured output's threads (Node): compiles go to a thread with no guide alive on it
 * (a new one while there are fewer than `size`), so that a compile never makes a running
 * guide's next mask wait, and with it every request batched with that guide; only when
 * every thread has guides alive does a compile go to the one with fewest (documented:
 * their batch then waits up to one compile). Caches the factories by the request as sent.
 */
export class GuideThreadPool implements GrammarThread {
  private readonly threads: GuideThread[] = [];
  private readonly byRequest = new Map<string, Promise<GuideFactory>>();
  private readonly utf8: Utf8MaskFilter;

  constructor(
    private readonly vocabulary: TokenVocabulary,
    private readonly size: number,
    private readonly cacheSize: number,
  ) {
    this.utf8 = new Utf8MaskFilter(vocabulary);
  }

  cached(key: string | null): Promise<GuideFactory> | undefined {
    if (key === null) return undefined;
    const found = this.byRequest.get(key);
    if (found !== undefined) {
      this.byRequest.delete(key);
      this.byRequest.set(key, found);
    }
    return found;
  }

  compile(request: GuidedDecodingRequest, key: string | null, limits: GuidedLimits): Promise<GuideFactory> {
    const factory = this.pick().compile(request, limits);
    if (key !== null) {
      this.byRequest.set(key, factory);
      factory.catch(() => this.byRequest.delete(key));
      while (this.byRequest.size > this.cacheSize) this.byRequest.delete(this.byRequest.keys().next().value!);
    }
    return factory;
  }

  /** Null while the threads work; otherwise why not. */
  brokenReason(): string | null {
    for (const thread of this.threads) {
      const reason = thread.brokenReason();
      if (reason !== null) return reason;
    }
    return null;
  }

  /** Whether the next compile would make running guides wait (every thread has some, and no new thread may start). */
  get crowded(): boolean {
    return this.threads.length >= this.size && this.threads.every((thread) => thread.liveGuides > 0 || thread.busy);
  }

  /** Threads started (for tests and the load report). */
  get started(): number {
    return this.threads.length;
  }

  close(): void {
    for (const thread of this.threads) thread.close();
  }

  private pick(): GuideThread {
    const idle = this.threads.find((thread) => thread.liveGuides === 0 && !thread.busy);
    if (idle !== undefined) return idle;
    if (this.threads.length < this.size) {
      const thread = new GuideThread(this.vocabulary, this.utf8, () => this.byRequest.clear());
      this.threads.push(thread);
      return thread;
    }
    return this.threads.reduce((best, thread) => (thread.liveGuides < best.liveGuides ? thread : best));
  }
}

/**
 * Structured output off the event loop (Node): one thread holds XGrammar for a vocabulary,
 * compiles every constraint there (our conversion to EBNF and XGrammar's compile, up to
 * about a second at maxGrammarWork) and runs every matcher on the grammars it compiled (a
 * compiled grammar cannot leave the WebAssembly memory it was built in). The loop keeps
 * what is cheap: the UTF-8 filter and masking the logits row.
 *
 * A guide's mask is computed on the thread right after each accepted token, while the
 * model runs its next step, and read from shared memory; the engine awaits `pending()`
 * before it samples (so a mask held up behind another request's compile waits off the
 * loop), and drops a speculative step's guesses for a guide whose thread is `busy()`
 * compiling (checking guesses needs masks at once). A mask asked for synchronously
 * otherwise is waited for with Atomics.wait: the thread answers in microseconds when
 * not compiling.
 */
export class GuideThread {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly compiles = new Map<number, { resolve(grammar: number): void; reject(error: unknown): void; request: GuidedDecodingRequest }>();
  private readonly live = new Map<number, WeakRef<ThreadGuide>>();
  private broken: string | null = null;
  private generation = 0;
  /** A guide dropped without dispose() still frees its matcher on the thread eventually. */
  private readonly guideFinalizer = new FinalizationRegistry<{ guide: number; generation: number }>(({ guide, generation }) => {
    this.live.delete(guide);
    if (generation === this.generation) this.post({ type: 'dispose', guide });
  });
  private readonly releaser = new FinalizationRegistry<{ grammar: number; generation: number }>(({ grammar, generation }) => {
    if (generation === this.generation) this.post({ type: 'release', grammar });
  });
  readonly utf8: Utf8MaskFilter;
  readonly stopTokenIds: ReadonlySet<number>;

  constructor(
    private readonly vocabulary: TokenVocabulary,
    utf8: Utf8MaskFilter,
    /** Told when the thread ended (its grammars are gone: cached factories must go too). */
    private readonly onEnded: () => void = () => {},
  ) {
    this.utf8 = utf8;
    this.stopTokenIds = new Set(vocabulary.stopTokenIds);
  }

  get vocabSize(): number {
    return this.vocabulary.size;
  }

  /** Compiles waiting for the thread or running on it: a mask asked for now could wait behind them. */
  get busy(): boolean {
    return this.compiles.size > 0;
  }

  /** Guides alive on this thread: their masks would wait behind a compile started here. */
  get liveGuides(): number {
    return this.live.size;
  }

  /** Null while the thread works; why not after XGrammar trapped on it, until a new one is up. */
  brokenReason(): string | null {
    return this.broken;
  }

  /** Starts the thread and XGrammar on it ahead of the first constraint. */
  warmUp(): void {
    this.thread();
  }

  /** Compiles `request` on the thread (refusals as ProtocolErrors naming the field). */
  compile(request: GuidedDecodingRequest, limits: GuidedLimits): Promise<GuideFactory> {
    return this.compileUncached(request, limits);
  }

  /** Ends the thread (the server stops): guides still running fail. */
  close(): void {
    const worker = this.worker;
    this.worker = null;
    void worker?.terminate();
  }

  private async compileUncached(request: GuidedDecodingRequest, limits: GuidedLimits): Promise<GuideFactory> {
    const id = this.nextId++;
    const generation = this.generation;
    const worker = this.thread();
    worker.ref();
    let grammar: number;
    try {
      grammar = await new Promise<number>((resolve, reject) => {
        this.compiles.set(id, { resolve, reject, request });
        worker.postMessage({ type: 'compile', id, request, limits } satisfies ToGuideThread);
      });
    } finally {
      this.compiles.delete(id);
      if (this.compiles.size === 0) this.worker?.unref();
    }
    const factory: GuideFactory = {
      request,
      createGuide: () => {
        if (generation !== this.generation) throw new Error('the structured-output thread was restarted after XGrammar failed; retry the request');
        const guideId = this.nextId++;
        const guide = new ThreadGuide(this, guideId, this.vocabulary.size);
        this.live.set(guideId, new WeakRef(guide));
        this.guideFinalizer.register(guide, { guide: guideId, generation }, guide);
        this.post({ type: 'guide', guide: guideId, grammar, slot: guide.slot });
        return guide;
      },
    };
    this.releaser.register(factory, { grammar, generation });
    return factory;
  }

  /** @internal: ThreadGuide's messages. */
  post(message: ToGuideThread): void {
    this.flush();
    this.worker?.postMessage(message);
  }

  /** Accepted tokens not sent yet: [guide, token, ...]. */
  private outbox: number[] = [];

  /** @internal: an accepted token, sent with the step's others (at the end of this task, or when a mask is asked for). */
  accepted(guide: number, token: number): void {
    if (this.outbox.length === 0) queueMicrotask(() => this.flush());
    this.outbox.push(guide, token);
  }

  /** @internal */
  flush(): void {
    if (this.outbox.length === 0) return;
    const accepted = this.outbox;
    this.outbox = [];
    this.worker?.postMessage({ type: 'accept', accepted } satisfies ToGuideThread);
  }

  /** @internal */
  forget(guide: number, holder: object): void {
    this.guideFinalizer.unregister(holder);
    this.live.delete(guide);
    this.post({ type: 'dispose', guide });
  }

  private thread(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = startModuleWorker(import.meta.url, 'guide-thread-worker');
    worker.unref();
    worker.on('message', (message: FromGuideThread) => this.onMessage(worker, message));
    worker.on('error', (error) => this.ended(worker, `the structured-output thread failed: ${error.message}`));
    worker.on('exit', (code) => this.ended(worker, `the structured-output thread exited (code ${code})`));
    worker.postMessage({ type: 'vocabulary', vocabulary: this.vocabulary } satisfies ToGuideThread);
    this.worker = worker;
    return worker;
  }

  private onMessage(worker: Worker, message: FromGuideThread): void {
    if (message.type === 'trapped' || (message.type === 'refused' && message.trapped)) {
      // Replaced before the refusal is answered, so that no later constraint reaches it.
      const reason = message.message;
      if (this.worker === worker) {
        console.error(`XGrammar trapped on the structured-output thread; starting a new one: ${reason}`);
        this.ended(worker, `XGrammar trapped: ${reason}`, message.type === 'refused' ? message.id : undefined);
        void worker.terminate();
      }
      if (message.type === 'trapped') return;
    }
    const pending = this.compiles.get(message.id);
    if (pending === undefined) return;
    if (message.type === 'compiled') pending.resolve(message.grammar);
    else if (message.type === 'refused') {
      const param = guidedParam(pending.request);
      pending.reject(new ProtocolError('invalid_request', `Invalid ${param}: ${message.message}.${message.trapped ? ' Simplify the constraint.' : ''}`, param));
    } else pending.reject(new Error(`structured output's grammar engine failed: ${message.message}`));
  }

  /** The thread is gone: its compiles fail, its guides fail, the next compile starts a new one. */
  private ended(worker: Worker, reason: string, answered?: number): void {
    if (this.worker !== worker) return;
    this.worker = null;
    this.generation += 1;
    this.onEnded();
    for (const [id, pending] of this.compiles) {
      if (id === answered) continue;
      this.compiles.delete(id);
      // One compile runs at a time (the gate): the thread died on this constraint (XGrammar
      // exhausting the thread's stack on a deep grammar ends it outright).
      const param = guidedParam(pending.request);
      pending.reject(new ProtocolError('invalid_request', `Invalid ${param}: it is too complex for the grammar engine (${reason}). Simplify the constraint.`, param));
    }
    for (const ref of this.live.values()) ref.deref()?.threadEnded();
    this.live.clear();
    // A new thread at once (XGrammar starting on it) if this one died under work or trapped;
    // /health answers 503 until the new one is up.
    this.broken = `structured output's grammar engine (XGrammar) failed: ${reason}`;
    const replacement = this.thread();
    replacement.once('online', () => {
      if (this.worker === replacement) this.broken = null;
    });
  }
}

const SYNC_WAIT_MS = 30_000;

/** A guide whose matcher lives on the guide thread; its masks come through `slot`. */
class ThreadGuide implements Guide {
  readonly slot: SharedArrayBuffer;
  private readonly state: Int32Array;
  private readonly shared: Int32Array;
  private readonly mask: Int32Array;
  private maskValid = false;
  private utf8State = UTF8_BOUNDARY;
  private terminated = false;
  private disposed = false;
  private ended = false;

  constructor(
    private readonly owner: GuideThread,
    private readonly id: number,
    private readonly vocabSize: number,
  ) {
    const words = Math.ceil(vocabSize / 32);
    this.slot = new SharedArrayBuffer((SLOT_MASK_OFFSET + words) * 4);
    this.state = new Int32Array(this.slot, 0, SLOT_MASK_OFFSET);
    this.shared = new Int32Array(this.slot, SLOT_MASK_OFFSET * 4, words);
    this.mask = new Int32Array(words);
  }

  pending(): Promise<void> | null {
    if (this.terminated || this.disposed || Atomics.load(this.state, SLOT_STATE) !== MASK_PENDING) return null;
    this.owner.flush();
    const waited = (Atomics as unknown as { waitAsync(array: Int32Array, index: number, value: number): { async: boolean; value: Promise<string> | string } }).waitAsync(
      this.state,
      SLOT_STATE,
      MASK_PENDING,
    );
    if (!waited.async) return null;
    // A wait on shared memory does not keep Node running: this does, until the mask is there.
    const keepAlive = setInterval(() => {}, 1 << 30);
    return (waited.value as Promise<string>).then(() => clearInterval(keepAlive));
  }

  busy(): boolean {
    return this.owner.busy && Atomics.load(this.state, SLOT_STATE) === MASK_PENDING;
  }

  allowedMask(): Int32Array {
    if (this.maskValid) return this.mask;
    if (this.disposed) throw new Error('this guide was disposed');
    if (this.terminated) this.mask.fill(0);
    else {
      if (Atomics.load(this.state, SLOT_STATE) === MASK_PENDING) {
        this.owner.flush();
        Atomics.wait(this.state, SLOT_STATE, MASK_PENDING, SYNC_WAIT_MS);
      }
      const state = Atomics.load(this.state, SLOT_STATE);
      if (state === MASK_PENDING) throw new Error(`the structured-output thread gave no token mask within ${SYNC_WAIT_MS} ms`);
      if (state === MASK_FAILED || this.ended) throw new Error('the guided-decoding grammar failed on its thread (the grammar rejected a token, or XGrammar failed)');
      this.mask.set(this.shared);
      this.owner.utf8.apply(this.mask, this.utf8State);
      const tail = this.vocabSize & 31;
      if (tail !== 0) this.mask[this.mask.length - 1] &= (1 << tail) - 1;
    }
    this.maskValid = true;
    return this.mask;
  }

  isAllowed(tokenId: number): boolean {
    return maskAllows(this.allowedMask(), this.vocabSize, tokenId);
  }

  maskLogits(logits: Float32Array): void {
    applyMask(this.allowedMask(), this.vocabSize, logits);
  }

  firstAllowedToken(): number {
    return firstAllowed(this.allowedMask());
  }

  accept(tokenId: number): void {
    if (!this.isAllowed(tokenId)) throw new Error(`token ${tokenId} is not allowed by the guided-decoding grammar here`);
    this.utf8State = this.owner.utf8.advance(this.utf8State, tokenId);
    if (this.utf8State === UTF8_INVALID) throw new Error(`token ${tokenId} breaks the UTF-8 encoding of the output`);
    // The grammar allows a stop token only where it is complete; accepting one ends it (XGrammar's IsTerminated).
    this.terminated = this.owner.stopTokenIds.has(tokenId);
    this.maskValid = false;
    if (this.terminated) return;
    Atomics.store(this.state, SLOT_STATE, MASK_PENDING);
    this.owner.accepted(this.id, tokenId);
  }

  isTerminated(): boolean {
    return this.terminated;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.owner.forget(this.id, this);
  }

  /** @internal: the thread ended under this guide. */
  threadEnded(): void {
    this.ended = true;
    Atomics.store(this.state, SLOT_STATE, MASK_FAILED);
    Atomics.notify(this.state, SLOT_STATE);
  }
}
