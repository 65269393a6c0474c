import { BatchRunner, type JoiningRow, type PartialPrefill, type PrefixReuse } from './batch-runner.js';
import { SliceSizer } from './chunked-prefill/slice-sizer.js';
import { kvBytesPerToken } from './context-length.js';
import { PrefixCache } from './prefix-cache/prefix-cache.js';
import type { BatchingMode } from './loading/batching-self-test.js';
import type { Decoder } from './onnx-decoder.js';
import type { EngineLora } from './engine-lora.js';
import { EngineOverloadedError } from './errors.js';
import { laneTakesRequest, ownLaneForLongRow, type PipelineSettings } from './model-thread/lanes.js';
import type { ModelThread } from './model-thread/thread-plan.js';
import type { PlaceholderEmbeds } from '../onnx/placeholder-embeds.js';
import { extraSequenceSlots, type SchedulerLimits } from './scheduler-limits.js';
import type { RequestGroup } from './sequence-group.js';
import type { LoraAdapter } from '../adapters/peft-adapter.js';
import { releaseKvCache } from './kv/kv-cache.js';
import type { KvCache } from './kv/types.js';
import { watchLoopTurn, yieldBetweenSteps, yieldToEventLoop, type LoopTurnWatch } from '../threads/yield.js';
import { traceStep, tracingSteps } from './chunked-prefill/step-trace.js';

/**
 * The engine's step loop (LocalEngine hands it every request it accepted): the waiting
 * queue, admission (token budget, running-sequence cap, adapter slots, the waiting
 * deadline) and the lanes, each a BatchRunner stepped by its own loop. One lane prefills
 * newly arrived prompts (once per request, however many sequences it asks for), then
 * decodes all its running rows together, one model call per step, and lets the event loop
 * breathe between steps.
 *
 * A request whose prefill leaves long work on its logits (prompt logprobs: RequestGroup.prepare)
 * is "preparing": that work runs in slices between the lane's steps, its prefill cache held,
 * and the request joins the batch at the first step after it is done. Other requests' steps
 * go on meanwhile; the loop is never held for the whole pass.
 *
 * A long prompt arriving while rows decode is prefilled in slices, one between two decode
 * steps (chunked prefill, vLLM's --enable-chunked-prefill): the running streams go on at
 * a pace the slice size keeps (chunked-prefill/slice-sizer.ts), and the request joins the
 * batch after its last slice. Why a slice is its own model call rather than mixed with the
 * decode rows into one: chunked-prefill/slice-sizer.ts.
 */

/** A prefilled request whose prepare() is running: it joins its lane when `settled`. */
interface Preparing {
  group: RequestGroup;
  logits: Float32Array;
  cache: KvCache;
  settled: boolean;
  error?: unknown;
}

/** A request whose prompt is being prefilled slice by slice; it joins its lane after the last. */
interface Chunking {
  group: RequestGroup;
  partial: PartialPrefill;
}

/** A batch of the running rows with its own step loop (more than one: model-thread/lanes.ts). */
interface Lane {
  index: number;
  runner: BatchRunner;
  loop: Promise<void> | null;
  /** Rows prefilled for this lane and not admitted yet (those preparing included). */
  joining: number;
  /** Requests prefilled for this lane whose preparation is running or done (collectPrepared). */
  preparing: Preparing[];
  /** The request prefilled in slices between this lane's steps; admission waits while there is one. */
  chunking: Chunking | null;
  /** Sizes the slices from this lane's measured step and prefill times. */
  sizer: SliceSizer;
}

export interface SchedulerOptions {
  limits: SchedulerLimits;
  batching: BatchingMode;
  modelThread: ModelThread;
  /** Lanes whose steps overlap (worker mode only). */
  pipeline: PipelineSettings;
  /** The LoRA adapters and their slots, when the engine serves adapters. */
  adapters?: EngineLora;
  /** Waiting prompts may share a prefill call (the batching self-test's prefillTogether). */
  prefillTogether?: boolean;
  /** Keep prompts' KV for later prompts that start the same way (prefix-cache/). */
  prefixCaching?: boolean;
  /** Long prompts arriving while rows decode are prefilled in slices between steps (the graph continues a prompt on its KV correctly). */
  chunkedPrefill?: boolean;
}

/** The prefix cache's namespace for KV computed without an adapter. */
const BASE_MODEL_NAMESPACE = 'base';

export class Scheduler {
  readonly waiting: RequestGroup[] = [];
  /** Requests prefilled and not finished yet. */
  private readonly running = new Set<RequestGroup>();
  private readonly lanes: Lane[];
  private readonly limits: SchedulerLimits;
  private readonly adapters: EngineLora | undefined;
  private readonly pipelineMinRows: number;
  /** Worker mode: each step is sent before the last one's tokens are streamed (runLane). */
  private readonly launchEarly: boolean;
  /** Resolved when a lane's batch changes or a request arrives: wakes lanes that had nothing to do. */
  private change: { promise: Promise<void>; resolve: () => void } | null = null;
  readonly counters = { steps: 0, generatedTokens: 0 };
  /** Each model call serves one request: the graph cannot batch others, or the setting says so. */
  private readonly oneRequestPerStep: boolean;
  /** Whether waiting prompts may share a prefill call (SchedulerOptions.prefillTogether). */
  private readonly sharesPrefills: boolean;
  /** The prefix cache (SchedulerOptions.prefixCache), null when off. */
  readonly prefixCache: PrefixCache | null;
  /** Namespaces of the prefix cache per adapter: KV computed with one adapter is not another's. */
  private readonly adapterNamespaces = new WeakMap<LoraAdapter, string>();
  /** Media features of waiting requests, handed to their prefill. */
  private readonly placeholders = new WeakMap<RequestGroup, readonly PlaceholderEmbeds[]>();
  /** Requests with media parts: their KV is not kept (prefix-cache.ts). */
  private readonly withMedia = new WeakSet<RequestGroup>();

  private readonly kvBytesPerToken: number;
  /** SchedulerOptions.chunkedPrefill. */
  private readonly chunkedPrefill: boolean;

  constructor(decoder: Decoder, options: SchedulerOptions) {
    this.kvBytesPerToken = kvBytesPerToken(decoder.spec, decoder.contract.kvType);
    const { limits, batching, modelThread, pipeline } = options;
    this.limits = limits;
    this.sharesPrefills = options.prefillTogether ?? false;
    this.adapters = options.adapters;
    this.prefixCache = options.prefixCaching ? new PrefixCache(this.kvBytesPerToken, () => this.prefixCapacity()) : null;
    this.oneRequestPerStep = batching.kind !== 'batched';
    const laneCount = this.oneRequestPerStep || modelThread !== 'worker' ? 1 : Math.max(1, pipeline.lanes);
    this.pipelineMinRows = pipeline.minRows;
    this.launchEarly = modelThread === 'worker';
    this.lanes = Array.from({ length: laneCount }, (_, index) => ({
      index,
      runner: new BatchRunner(decoder, {
        mode: limits.speculativeDecoding,
        numSpeculativeTokens: limits.numSpeculativeTokens,
        maxRows: limits.speculativeMaxSequences,
      }, batching.kind === 'batched' ? batching.padding : 'end'),
      loop: null,
      joining: 0,
      preparing: [],
      chunking: null,
      sizer: new SliceSizer(limits.longPrefillTokenThreshold),
    }));
    this.chunkedPrefill = options.chunkedPrefill ?? false;
    // A finished sequence's prompt and output stay for the next turn of its conversation
    // (llama.cpp keeps a slot's whole sequence; vLLM caches generated tokens' full blocks).
    if (this.prefixCache !== null) {
      for (const lane of this.lanes) lane.runner.keepFinished = (group) => (this.withMedia.has(group as RequestGroup) ? undefined : this.prefixReuse(group as RequestGroup));
    }
  }

  /** Queues an accepted request (with its media features, if any) and starts the lanes' loops. */
  enqueue(group: RequestGroup, placeholders: readonly PlaceholderEmbeds[] | undefined): void {
    if (placeholders !== undefined && placeholders.length > 0) {
      this.placeholders.set(group, placeholders);
      this.withMedia.add(group);
    }
    this.waiting.push(group);
    this.ensureLoop();
  }

  /** Ends every request and waits for the lanes' loops to stop. */
  async stop(): Promise<void> {
    for (const group of [...this.waiting, ...this.running]) this.abort(group);
    this.signalChange();
    await Promise.all(this.lanes.map((lane) => lane.loop));
    this.prefixCache?.clear();
  }

  /** Takes a waiting request out of the queue, or has the loop end a running one before its next step. */
  abort(group: RequestGroup): void {
    if (group.finished) return;
    const queued = this.waiting.indexOf(group);
    if (queued >= 0) {
      this.waiting.splice(queued, 1);
      group.abort();
      return;
    }
    // Running: the loop ends it before the next step, so its rows leave the batch at once.
    group.abortRequested = true;
  }

  private ensureLoop(): void {
    for (const lane of this.lanes) {
      if (lane.loop) continue;
      lane.loop = this.runLane(lane).finally(() => {
        lane.loop = null;
        if (this.waiting.length > 0) this.ensureLoop();
      });
    }
    // Lanes that found nothing to take look again.
    this.signalChange();
  }

  /** Rows in the lanes' batches (not counting rows joining). */
  rowsRunning(): number {
    let rows = 0;
    for (const lane of this.lanes) rows += lane.runner.size;
    return rows;
  }

  /** Rows of the lanes' batches that take part in their next steps (finished ones not counted). */
  private rowsDecoding(): number {
    let rows = 0;
    for (const lane of this.lanes) rows += lane.runner.decodingRows;
    return rows;
  }

  private signalChange(): void {
    const change = this.change;
    this.change = null;
    change?.resolve();
  }

  private nextChange(): Promise<void> {
    if (this.change === null) {
      let resolve!: () => void;
      const promise = new Promise<void>((done) => (resolve = done));
      this.change = { promise, resolve };
    }
    return this.change.promise;
  }

  /** Ends aborted requests before the next step, so their rows leave the batch at once. */
  private endAborted(): void {
    for (const group of this.running) {
      if (group.abortRequested && !group.finished) group.abort();
      if (group.finished) this.running.delete(group);
    }
  }

  /**
   * One lane's step loop: admits what this lane takes of the waiting requests, steps its
   * batch, and lets the event loop breathe. A lane with no rows while requests wait for
   * a busy lane sleeps until something changes; with no rows and nothing waiting, it ends.
   *
   * In worker mode a step's successor is sent as soon as its tokens are picked, before the
   * event loop runs their consumers (SSE, HTTP): the worker computes while this thread
   * streams. Only a step that admits requests waits for the yield first (its prefills).
   */
  private async runLane(lane: Lane): Promise<void> {
    const { runner } = lane;
    let launched: Promise<() => number> | null = null;
    let launchedAt = 0;
    // Armed before each launch: a step whose model call already let the event loop turn needs no yield of its own.
    let turn: LoopTurnWatch = { turned: false };
    for (;;) {
      if (launched === null) {
        this.endAborted();
        const joining = this.collectPrepared(lane);
        lane.joining = joining.length + preparingWidth(lane) + chunkingWidth(lane);
        if (lane.chunking !== null) await this.prefillNextSlice(lane, joining);
        runner.keepFinishedRows();
        joining.push(...(await this.prefillWaiting(lane, joining.length)));
        const admitting = tracingSteps() ? performance.now() : 0;
        runner.admitAndEvict(joining);
        if (tracingSteps() && joining.length > 0) traceStep({ at: performance.now(), kind: 'admit', ms: performance.now() - admitting, size: runner.size, slots: runner.kvSlots, lane: lane.index });
        lane.joining = preparingWidth(lane) + chunkingWidth(lane);
        if (runner.size === 0) {
          // A prompt prefilled in slices goes on at the next pass (with nobody decoding, in one slice).
          if (lane.chunking !== null) continue;
          if (this.waiting.length === 0 && lane.preparing.length === 0) return;
          // A preparation that settled while the prefills ran joins at the next pass.
          if (lane.preparing.some((entry) => entry.settled)) {
            await yieldToEventLoop();
            continue;
          }
          // Requests wait for another lane (it wakes this one when its batch changes), for
          // this lane's preparations (each wakes it when done), or for the rows this lane
          // just let go (the next pass admits them, after a yield).
          const othersBusy = this.lanes.some((other) => other !== lane && (other.runner.size > 0 || other.joining > 0));
          await (othersBusy || lane.preparing.length > 0 ? this.nextChange() : yieldToEventLoop());
          continue;
        }
        turn = watchLoopTurn();
        launched = runner.launchStep();
        launchedAt = performance.now();
      }
      try {
        const pickTokens = await launched;
        lane.sizer.stepTook(runner.lastCallMs ?? performance.now() - launchedAt);
        if (tracingSteps()) traceStep({ at: performance.now(), kind: 'step', ms: performance.now() - launchedAt, size: runner.size, slots: runner.kvSlots, lane: lane.index, callMs: runner.lastCallMs ?? undefined });
        this.counters.generatedTokens += pickTokens();
        this.counters.steps += 1;
      } catch (error) {
        runner.failAll(error);
      }
      launched = null;
      if (this.launchEarly && this.waiting.length === 0 && lane.chunking === null && !lane.preparing.some((entry) => entry.settled)) {
        this.endAborted();
        runner.admitAndEvict([]);
        if (runner.size > 0) {
          turn = watchLoopTurn();
          launched = runner.launchStep();
          launchedAt = performance.now();
        }
      }
      if (this.lanes.length > 1) this.signalChange();
      if (!turn.turned) await yieldBetweenSteps();
    }
  }

  /** Whether `lane` takes the waiting request `group` (one lane: always; a long prompt: an idle lane of its own, if any). */
  private laneTakes(lane: Lane, group: RequestGroup): boolean {
    if (this.lanes.length === 1) return true;
    const own = ownLaneForLongRow(
      group.promptTokenIds.length,
      this.lanes.map((each) => ({
        rows: each.runner.size + each.joining,
        longestRow: each.runner.longestRow,
        idle: each.runner.size === 0 && each.joining === 0 && each.chunking === null && each.preparing.length === 0,
      })),
    );
    if (own >= 0) return own === lane.index;
    const loads = this.lanes.map((each) => each.runner.size + each.joining);
    return laneTakesRequest(lane.index, loads, this.pipelineMinRows);
  }

  /**
   * The rows of this lane's requests whose preparation is done, started now (their first
   * tokens picked from the prefill's logits) to join at this admission; requests that went
   * away meanwhile are ended and their caches released.
   */
  private collectPrepared(lane: Lane): JoiningRow[] {
    const joining: JoiningRow[] = [];
    const { runner } = lane;
    const settled = lane.preparing.filter((entry) => entry.settled);
    if (settled.length === 0) return joining;
    lane.preparing = lane.preparing.filter((entry) => !entry.settled);
    for (const { group, logits, cache, error } of settled) {
      if (error !== undefined) group.fail(error);
      else if (group.abortRequested && !group.finished) group.abort();
      if (group.finished) {
        this.running.delete(group);
        releaseKvCache(cache);
        continue;
      }
      try {
        const { rows, generated } = group.start(logits);
        this.counters.generatedTokens += generated;
        if (group.finished) this.running.delete(group);
        for (const row of rows) joining.push({ row, group, cache, cacheRow: 0 });
        runner.returnPrefill(cache);
      } catch (failure) {
        group.fail(failure);
        this.running.delete(group);
        releaseKvCache(cache);
      }
    }
    return joining;
  }

  /** Hands `group`'s prefill to its prepare() and parks it on the lane until that settles. */
  private startPreparing(lane: Lane, group: RequestGroup, preparation: Promise<void>, logits: Float32Array, cache: KvCache): void {
    lane.runner.holdPrefill(cache);
    const entry: Preparing = { group, logits, cache, settled: false };
    lane.preparing.push(entry);
    this.running.add(group);
    preparation.then(
      () => {
        entry.settled = true;
        this.signalChange();
      },
      (error: unknown) => {
        entry.settled = true;
        entry.error = error ?? new Error('preparing the request failed');
        this.signalChange();
      },
    );
  }

  /**
   * Admits waiting requests in order while they fit: the running-sequence cap, the token
   * budget, a free adapter slot. A request that does not fit stops the pass, so the ones
   * behind it wait too (first come, first served), with one exception, the extra share:
   *
   * A request's sequences beyond its first (a client request's n × prompts, best_of, the
   * beam width) are its extra sequences, and those of all running requests together hold at
   * most `maxExtraSequenceSlotPercent` of the batch. A request whose extra sequences do not
   * fit that share waits, and requests behind it that bring no extra sequence (one sequence,
   * a client request's first) pass it; requests with extra sequences behind it do not. So
   * the rest of the batch is always there for first sequences: a normal request arriving
   * beside two widest ones starts at the next pass. The wide request's wait is bounded:
   * while it waits no other request adds extra sequences, so the share frees as soon as the
   * wide requests already running end (each within its max_tokens); from then on it blocks
   * the queue like any request that does not fit, until enough rows are free (the requests
   * that passed it end within theirs). waitingDeadlineMs still applies to it.
   */
  private async prefillWaiting(lane: Lane, alreadyJoining = 0): Promise<JoiningRow[]> {
    this.refuseOverdue();
    const { runner } = lane;
    const joining: JoiningRow[] = [];
    // Every running sequence costs one token in the coming step; prompts share the rest.
    let budget = this.limits.maxBatchedTokens - runner.size - alreadyJoining;
    const extra = this.extraRowsHeld();
    const extraSlots = extraSequenceSlots(this.limits.maxRunningSequences, this.limits.maxExtraSequenceSlotPercent);
    // Set once a request waits for the extra share: from then on only requests without extra sequences pass.
    let waitingForShare = false;
    // Admitted requests whose prompts are prefilled together (BatchRunner.prefillTogether), at the end of the pass.
    const together: RequestGroup[] = [];
    let index = 0;
    // The slices of a long prompt are this lane's prefill work until its last one.
    while (index < this.waiting.length && lane.chunking === null) {
      const next = this.waiting[index];
      const rowsNow = this.rowsRunning() + this.lanes.reduce((sum, each) => sum + each.joining, 0);
      const idle = rowsNow === 0;
      if (this.oneRequestPerStep && !idle) break;
      // Lanes split rows by load even when the engine is idle (the first lane while the batch is small).
      if (!this.laneTakes(lane, next)) break;
      const key = next.requestKey ?? next;
      const keyRows = extra.rowsByRequest.get(key) ?? 0;
      const addsExtra = Math.max(0, keyRows + next.width - 1) - Math.max(0, keyRows - 1);
      if (!idle && addsExtra > 0 && (waitingForShare || extra.total + addsExtra > extraSlots)) {
        waitingForShare = true;
        index += 1;
        continue;
      }
      // An idle engine always takes one request, so a prompt longer than the budget, or a
      // request with more sequences than the batch holds, still runs.
      if (!idle && rowsNow + next.width > this.limits.maxRunningSequences) break;
      // A prompt that can be prefilled in slices takes a slice of the budget at a time.
      const sliceable = this.chunkedPrefill && !next.needsPromptLogits && !this.placeholders.has(next);
      if (!idle && !sliceable && next.promptTokenIds.length > budget) break;
      // Its adapter needs a slot; with every slot held by running requests' adapters it
      // waits (in order: the requests behind it wait too).
      if (next.adapter) {
        const slot = this.adapters!.slots.acquire(next.adapter, this.adaptersInUse(joining));
        if (slot === null) break;
        next.loraSlot = slot;
      }
      this.waiting.splice(index, 1);
      next.admittedAt = Date.now();
      extra.rowsByRequest.set(key, keyRows + next.width);
      extra.total += addsExtra;
      budget -= next.promptTokenIds.length;
      // Counted while its prefill runs, so the other lanes balance against it.
      lane.joining += next.width;
      const reuse = this.prefixReuse(next);
      if (this.sliced(lane, next, reuse)) {
        this.startChunking(lane, next, reuse);
        await this.prefillNextSlice(lane, joining);
        lane.joining = alreadyJoining + joining.length + preparingWidth(lane) + chunkingWidth(lane) + widthOf(together);
        continue;
      }
      if (
        this.sharesPrefills &&
        runner.prefillsTogether &&
        !next.needsPromptLogits &&
        (next.guidesPending?.() ?? null) === null &&
        !this.placeholders.has(next) &&
        (next.loraSlot ?? -1) < 0 &&
        (reuse === undefined || reuse.cache.peek(reuse.namespace, next.promptTokenIds) === 0)
      ) {
        together.push(next);
        continue;
      }
      try {
        const { logits, cache, cachedTokens } = await runner.prefill(next.promptTokenIds, next.needsPromptLogits, this.placeholders.get(next), next.loraSlot ?? -1, reuse);
        next.cachedPromptTokens = cachedTokens;
        this.placeholders.delete(next);
        this.counters.steps += 1;
        const preparation = next.prepare?.(logits) ?? null;
        if (preparation !== null) {
          this.startPreparing(lane, next, preparation, logits, cache);
        } else {
          const { rows, generated } = next.start(logits);
          this.counters.generatedTokens += generated;
          if (!next.finished) this.running.add(next);
          for (const row of rows) joining.push({ row, group: next, cache, cacheRow: 0 });
        }
        lane.joining = alreadyJoining + joining.length + preparingWidth(lane) + chunkingWidth(lane) + widthOf(together);
      } catch (error) {
        next.fail(error);
      }
    }
    if (together.length > 0) await this.prefillTogether(lane, together, joining);
    lane.joining = alreadyJoining + joining.length + preparingWidth(lane) + chunkingWidth(lane);
    return joining;
  }

  /**
   * Whether `group`'s prompt is prefilled in slices: chunked prefill is on, rows are decoding
   * whose pace it would hold up, and the prompt's uncached part is longer than a
   * slice. Prompts whose every position's logits are wanted, or with media features, run whole.
   */
  private sliced(lane: Lane, group: RequestGroup, reuse: PrefixReuse | undefined): boolean {
    // Rows only joining (prompts admitted in this pass) are not decoding yet: requests arriving
    // together at an idle engine are all prefilled at once (together, where the graph can).
    // Nor are finished rows the next admission drops: a chat's next turn arriving as the last
    // one ended was cut into a first slice and the rest, two model calls instead of one.
    const decoding = this.rowsDecoding();
    if (!this.chunkedPrefill || decoding === 0 || group.needsPromptLogits || this.placeholders.has(group)) return false;
    const cached = reuse === undefined ? 0 : reuse.cache.peek(reuse.namespace, group.promptTokenIds);
    return group.promptTokenIds.length - cached > this.pacer(lane).sliceTokens(this.limits.maxBatchedTokens - decoding);
  }

  /**
   * The sizer whose steps a lane's slices keep pace with: its own, or, for a lane with no
   * rows of its own (a long prompt in a lane of its own), the busiest lane's.
   */
  private pacer(lane: Lane): SliceSizer {
    if (lane.runner.size > 0) return lane.sizer;
    let busiest = lane;
    for (const each of this.lanes) if (each.runner.size > busiest.runner.size) busiest = each;
    return busiest.sizer;
  }

  private startChunking(lane: Lane, group: RequestGroup, reuse: PrefixReuse | undefined): void {
    const partial = lane.runner.startPartialPrefill(group.promptTokenIds, group.loraSlot ?? -1, reuse);
    group.cachedPromptTokens = partial.cachedTokens;
    lane.chunking = { group, partial };
    this.running.add(group);
  }

  /**
   * Feeds the lane's sliced prompt its next slice; after the last, its request starts (or
   * prepares) and its rows join at this admission, as after a whole prefill. A request that
   * went away meanwhile is dropped with its KV.
   */
  private async prefillNextSlice(lane: Lane, joining: JoiningRow[]): Promise<void> {
    const { group, partial } = lane.chunking!;
    const { runner } = lane;
    if (group.abortRequested && !group.finished) group.abort();
    if (group.finished) {
      runner.dropPartialPrefill(partial);
      lane.chunking = null;
      this.running.delete(group);
      return;
    }
    // Nobody decoding (in any lane; finished rows the next admission drops do not count):
    // nothing to keep pace with, the rest goes in one slice.
    const decoding = this.rowsDecoding() + joining.length;
    const pacer = this.pacer(lane);
    const sliceTokens = decoding === 0 ? Infinity : pacer.sliceTokens(this.limits.maxBatchedTokens - decoding);
    const before = partial.fed;
    const started = performance.now();
    let logits: Float32Array | null;
    try {
      logits = await runner.prefillSlice(partial, sliceTokens);
    } catch (error) {
      runner.dropPartialPrefill(partial);
      lane.chunking = null;
      this.running.delete(group);
      group.fail(error);
      return;
    }
    pacer.sliceTook(partial.fed - before, runner.lastCallMs ?? performance.now() - started);
    if (tracingSteps()) traceStep({ at: performance.now(), kind: 'slice', ms: performance.now() - started, size: partial.fed - before, lane: lane.index, callMs: runner.lastCallMs ?? undefined });
    this.counters.steps += 1;
    if (logits === null) return;
    lane.chunking = null;
    const cache = partial.cache!;
    try {
      const preparation = group.prepare?.(logits) ?? null;
      if (preparation !== null) {
        this.running.delete(group);
        this.startPreparing(lane, group, preparation, logits, cache);
        return;
      }
      const { rows, generated } = group.start(logits);
      this.counters.generatedTokens += generated;
      if (group.finished) this.running.delete(group);
      for (const row of rows) joining.push({ row, group, cache, cacheRow: 0 });
    } catch (error) {
      this.running.delete(group);
      group.fail(error);
    }
  }

  /** The admitted requests' prompts in shared model calls; each request then starts and its rows join, as after its own prefill. */
  private async prefillTogether(lane: Lane, groups: readonly RequestGroup[], joining: JoiningRow[]): Promise<void> {
    let prefills;
    try {
      const done = await lane.runner.prefillTogether(
        groups.map((group) => group.promptTokenIds),
        this.prefixCache === null ? undefined : { cache: this.prefixCache, namespace: BASE_MODEL_NAMESPACE },
      );
      this.counters.steps += done.calls;
      prefills = done.prefills;
    } catch (error) {
      for (const group of groups) group.fail(error);
      return;
    }
    groups.forEach((group, index) => {
      const { logits, cache, cacheRow } = prefills[index];
      try {
        const { rows, generated } = group.start(logits);
        this.counters.generatedTokens += generated;
        if (!group.finished) this.running.add(group);
        for (const row of rows) joining.push({ row, group, cache, cacheRow });
      } catch (error) {
        group.fail(error);
      }
    });
  }

  /** Where `group`'s prefill looks for and keeps prompt KV; undefined when prefix caching is off. */
  private prefixReuse(group: RequestGroup): PrefixReuse | undefined {
    if (this.prefixCache === null) return undefined;
    this.fitPrefixCache();
    const { adapter } = group;
    if (adapter === undefined || adapter === null) return { cache: this.prefixCache, namespace: BASE_MODEL_NAMESPACE };
    let namespace = this.adapterNamespaces.get(adapter);
    if (namespace === undefined) {
      // The adapter object, not its name: an adapter loaded again under the same name is another.
      namespace = `lora:${this.nextAdapterNamespace++}`;
      this.adapterNamespaces.set(adapter, namespace);
    }
    return { cache: this.prefixCache, namespace };
  }

  private nextAdapterNamespace = 1;

  /** KV slots the lanes' batches hold now. */
  kvSlotsRunning(): number {
    let slots = 0;
    for (const lane of this.lanes) slots += lane.runner.kvSlots;
    return slots;
  }

  /** Evicts kept prefixes the running batches now need the memory of. */
  private fitPrefixCache(): void {
    this.prefixCache?.fit(this.prefixCapacity());
  }

  /** KV bytes the lanes' batches hold now (kept prefixes not counted: they give way to running sequences, as vLLM's cached free blocks). */
  kvBytesRunning(): number {
    return this.kvSlotsRunning() * this.kvBytesPerToken;
  }

  /** Bytes the prefix cache may hold: the KV budget less what the running batches hold. */
  prefixCapacity(): number {
    return this.limits.kvCacheMemoryBytes - this.kvBytesRunning();
  }

  /**
   * Rows of the admitted requests (running, joining or preparing) by client request, and
   * their extra rows: each client request's rows beyond its first, summed. A request's rows
   * count until it ends, though some of its sequences may have ended before.
   */
  private extraRowsHeld(): { rowsByRequest: Map<object, number>; total: number } {
    const rowsByRequest = new Map<object, number>();
    for (const group of this.running) {
      if (group.finished) continue;
      const key = group.requestKey ?? group;
      rowsByRequest.set(key, (rowsByRequest.get(key) ?? 0) + group.width);
    }
    let total = 0;
    for (const rows of rowsByRequest.values()) total += rows - 1;
    return { rowsByRequest, total };
  }

  /** Adapters of the requests in the batch or joining it: their slots must not be rewritten. */
  private adaptersInUse(joining: readonly JoiningRow[]): Set<LoraAdapter> {
    const inUse = new Set<LoraAdapter>();
    for (const group of this.running) if (group.adapter && !group.finished) inUse.add(group.adapter);
    for (const { group } of joining) {
      const adapter = (group as RequestGroup).adapter;
      if (adapter) inUse.add(adapter);
    }
    return inUse;
  }

  /** Refuses requests that waited for admission past the deadline, so their clients hear back. */
  private refuseOverdue(): void {
    const now = Date.now();
    const deadline = this.limits.waitingDeadlineMs;
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      const group = this.waiting[i];
      if (now - group.enqueuedAt > deadline) {
        this.waiting.splice(i, 1);
        group.fail(
          new EngineOverloadedError(`The request waited more than ${deadline} ms for a free slot. Retry later.`, 1),
        );
      }
    }
  }
}

/** The rows these requests bring. */
function widthOf(groups: readonly RequestGroup[]): number {
  let width = 0;
  for (const group of groups) width += group.width;
  return width;
}

/** Rows the lane's sliced prompt will bring. */
function chunkingWidth(lane: Lane): number {
  return lane.chunking?.group.width ?? 0;
}

/** Rows the lane's preparing requests will bring (their widths): counted as joining, so admission leaves room for them. */
function preparingWidth(lane: Lane): number {
  let width = 0;
  for (const entry of lane.preparing) width += entry.group.width;
  return width;
}
