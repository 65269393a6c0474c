import { guidesPending, type BatchRow, type RowGroup, type StepRow } from './batch-row.js';
import { emptyKvCache, markRealSlots, releaseKvCache, repackKvCache } from './kv/kv-cache.js';
import type { KvCache, KvPadding, KvRowSource } from './kv/types.js';
import { promptInput, type Decoder, type DecoderInput } from './onnx-decoder.js';
import { freeReplacedKvBuffers } from './kv/free-kv-buffers.js';
import { localInPlaceKv, type InPlaceKvOps } from './kv/in-place-step.js';
import { rowRoom, slotRoom } from './kv/in-place-kv.js';
import type { PlaceholderEmbeds } from '../onnx/placeholder-embeds.js';
import type { SpeculativeDecoding } from './scheduler-limits.js';
import type { PrefixCache } from './prefix-cache/prefix-cache.js';

/** When the runner feeds guessed tokens (speculative decoding). */
export interface SpeculationOptions {
  /** Which rows guess: those of structured-output requests, all, or none. */
  mode: SpeculativeDecoding;
  /** Guesses fed per row and step. */
  numSpeculativeTokens: number;
  /**
   * Speculate only while the batch has at most this many rows. A small batch's step costs
   * the runtime's fixed overhead whatever it feeds, so guesses are nearly free; a large
   * batch already fills the step with useful work, and guesses would multiply it.
   */
  maxRows: number;
}

/** Where a prefill looks for a kept prefix of its prompt and keeps its own KV (prefix-cache.ts). */
export interface PrefixReuse {
  cache: PrefixCache;
  /** What else the KV depends on than the tokens: the LoRA adapter. */
  namespace: string;
}

/**
 * Slices up to this many tokens are written in place into the prompt's buffer (in-place
 * graphs); a larger one (the first from nothing, the rest in one call once nobody decodes, a
 * fixed large slice) is appended: attention reads the buffer's free slots too, which for a
 * large slice on a small past costs more than the copy saves (an 800-token first slice on
 * 1024 free slots: 2.3× the attention).
 */
const IN_PLACE_SLICE_TOKENS = 64;

/** A prompt being prefilled slice by slice (BatchRunner.startPartialPrefill). */
export interface PartialPrefill {
  readonly promptTokenIds: readonly number[];
  readonly loraSlot: number;
  readonly reuse: PrefixReuse | undefined;
  /** Prompt tokens whose KV `cache` holds. */
  fed: number;
  /** Of those, the ones taken from the prefix cache. */
  readonly cachedTokens: number;
  /** One row whose first `fed` slots are the prompt's so far (in-place graphs: room after them); null before the first slice. */
  cache: KvCache | null;
}

/** A row entering the batch: its KV cache is row `cacheRow` of `cache`. */
export interface JoiningRow {
  row: BatchRow;
  group: RowGroup;
  cache: KvCache;
  cacheRow: number;
}

/**
 * Runs the model for a set of rows: a prefill for each new prompt, then one decode step
 * at a time for all rows together, in a single forward pass per step. After each
 * forward, every group (a request: its n sequences, or its beams) gets all its rows'
 * logits at once and picks their next tokens; a group may fork rows (beam search), and
 * the forks join the batch with a copy of their parent's KV row at the next repack.
 *
 * Rows of different lengths share the step: each row's cache is aligned to the side the
 * graph wants (`padding`, chosen at load by the batching self-test) and its padding
 * masked (see kv/kv-cache.ts), and position_ids carry each row's own positions, so a
 * sequence's logits are the same as if it ran alone.
 */
export class BatchRunner {
  private rows: BatchRow[] = [];
  /** The group of each row, in step with `rows`. */
  private groups: RowGroup[] = [];
  /** Rows forked during the last step, copying rows of the current cache. */
  private forks: JoiningRow[] = [];
  private cache: KvCache;
  /** Prefill caches handed out and not yet admitted: released at the next admission. */
  private prefilled: KvCache[] = [];
  private speculation: SpeculationOptions;
  /** The graph takes an in-place cache (decoder-contract.ts, kvOutputs "new"). */
  private readonly inPlace: boolean;
  /** The in-place cache's operations: on this thread's arrays, or messages to the model's worker. */
  private readonly inPlaceKv: InPlaceKvOps;
  private readonly padding: KvPadding;
  /**
   * Where a finished row's KV is kept for later prompts (its prompt and output: a chat's next
   * turn reuses the reply too), by its group; undefined: not kept. Set by the scheduler.
   */
  keepFinished: ((group: RowGroup) => PrefixReuse | undefined) | null = null;
  /** Finished rows already kept (keepFinishedRows runs before admission and again at the repack). */
  private readonly keptRows = new WeakSet<BatchRow>();

  constructor(
    private readonly decoder: Decoder,
    speculation: SpeculationOptions = { mode: 'off', numSpeculativeTokens: 0, maxRows: 0 },
    padding: KvPadding = 'end',
  ) {
    this.inPlace = decoder.contract.kvOutputs === 'new';
    this.inPlaceKv = decoder.inPlaceKv ?? localInPlaceKv(decoder.spec.maxPositionEmbeddings);
    // An in-place cache keeps each row's real slots first, its free slots after them.
    this.padding = this.inPlace ? 'start' : padding;
    this.cache = this.emptyCache(0);
    this.speculation = speculation;
  }

  /** KV slots the batch's cache holds (rows allocated × slots per row): what the prefix cache leaves room for. */
  get kvSlots(): number {
    const { cache } = this;
    return cache.length * (this.inPlace ? rowRoom(cache.batch) : cache.batch);
  }

  /** KV slots of the batch's longest row (a row much longer joining would pad every row to it: model-thread/lanes.ts). */
  get longestRow(): number {
    let longest = 0;
    for (const row of this.rows) longest = Math.max(longest, row.cachedLength);
    return longest;
  }

  /** The last model call's own time (ms) where the decoder measures it (the model worker: without the wait behind other lanes' calls). */
  lastCallMs: number | null = null;

  /** Slots a kept prefix comes with for a prompt of `length` tokens and its first decode step (in-place graphs; otherwise exact). */
  private promptRoom(length: number): number | undefined {
    return this.inPlace ? slotRoom(length + 1, this.decoder.spec.maxPositionEmbeddings) : undefined;
  }

  /** Rows in the batch, those forked for the next step included. */
  get size(): number {
    return this.rows.length + this.forks.length;
  }

  /** Rows that will take part in the next step: `size` less the finished rows the next admission drops. */
  get decodingRows(): number {
    let rows = this.forks.length;
    for (const row of this.rows) if (!row.finished) rows += 1;
    return rows;
  }

  /**
   * Runs a prompt through the model. Returns the logits of every prompt position
   * ([length, vocab]) when `allPositions`, else at least the last one's (the array's last
   * `vocab` values), and the prompt's cache, which rows continuing the prompt join the
   * batch with (as row 0).
   */
  async prefill(
    promptTokenIds: readonly number[],
    allPositions = true,
    placeholders?: readonly PlaceholderEmbeds[],
    loraSlot = -1,
    reuse?: PrefixReuse,
  ): Promise<{ logits: Float32Array; cache: KvCache; cachedTokens: number }> {
    // A prompt with media features is neither matched nor kept (prefix-cache.ts); one whose
    // every position's logits are wanted (prompt logprobs) is kept, not matched.
    const keyed = reuse !== undefined && (placeholders === undefined || placeholders.length === 0);
    const length = promptTokenIds.length;
    // In-place graphs: the kept prefix comes with room for the whole prompt and its first
    // decode step, the rest of the prompt is written into it (no past + new joined into a third
    // cache), and an idle batch adopts it as its cache (admitAndEvict). A chat's next turn takes
    // the cache its last turn's row left (prefix-cache.ts lookup, keepFinishedRows): no copy of
    // the kept KV before the first token, or one when that cache has no room left for the new
    // turn; there were two, and two more after (a 500-token turn's KV is ~23 MB on the 135M model).
    const room = this.promptRoom(length);
    const hit = keyed && !allPositions ? reuse.cache.lookup(reuse.namespace, promptTokenIds, room) : null;
    const start = hit?.tokens ?? 0;
    let input: DecoderInput;
    if (hit === null) input = promptInput(promptTokenIds, this.emptyCache(1));
    else {
      const seqLen = length - start;
      const fed = {
        batch: 1,
        seqLen,
        inputIds: BigInt64Array.from(promptTokenIds.slice(start), (id) => BigInt(id)),
        positionIds: BigInt64Array.from({ length: seqLen }, (_, i) => BigInt(start + i)),
      };
      if (room === undefined) input = { ...fed, attentionMask: new BigInt64Array(length).fill(1n), past: hit.past };
      else {
        const { past, attentionMask, cacheLengths } = this.inPlaceKv.layout(hit.past, Int32Array.of(start), seqLen);
        input = { ...fed, attentionMask, past, cacheLengths };
      }
    }
    let ran;
    try {
      ran = await this.decoder.run({
        ...input,
        placeholders,
        logitsToKeep: allPositions ? length : 1,
        loraSlots: loraSlot >= 0 ? [loraSlot] : undefined,
      });
    } finally {
      // In place, present holds the same buffers (in the model's worker, under another handle).
      if (hit !== null) releaseKvCache(hit.past);
    }
    const { logits, present } = ran;
    this.prefilled.push(present);
    if (keyed) reuse.cache.insert(reuse.namespace, promptTokenIds, present, 0);
    return { logits, cache: present, cachedTokens: start };
  }

  /**
   * A prompt to prefill in slices between decode steps (chunked prefill): looks up its kept
   * prefix (the slices start after it) and holds nothing yet. Feed it with `prefillSlice`;
   * `dropPartialPrefill` releases it when its request goes away before the last slice.
   */
  startPartialPrefill(promptTokenIds: readonly number[], loraSlot = -1, reuse?: PrefixReuse): PartialPrefill {
    // In-place graphs: a kept prefix comes with room for the whole prompt, and the slices are written into it (prefillSlice).
    const room = this.promptRoom(promptTokenIds.length);
    const hit = reuse === undefined ? null : reuse.cache.lookup(reuse.namespace, promptTokenIds, room);
    return { promptTokenIds, loraSlot, reuse, fed: hit?.tokens ?? 0, cachedTokens: hit?.tokens ?? 0, cache: hit?.past ?? null };
  }

  /**
   * Feeds the next `maxTokens` (at most) of a partial prefill's prompt on the KV of those fed
   * before it: the same call a prefix-cache hit makes, so the graphs whose reuse self-test
   * passed compute what one whole prefill computes. Returns the last position's logits once
   * the prompt is all fed (its cache then joins the batch at the next admission, as a
   * prefill's, and is kept in the prefix cache), else null.
   */
  async prefillSlice(partial: PartialPrefill, maxTokens: number): Promise<Float32Array | null> {
    const { promptTokenIds, fed } = partial;
    const end = Math.min(promptTokenIds.length, fed + Math.max(1, Math.floor(maxTokens)));
    const seqLen = end - fed;
    let past = partial.cache ?? this.emptyCache(1);
    let attentionMask: BigInt64Array = new BigInt64Array(end).fill(1n);
    let cacheLengths: Int32Array | undefined;
    if (this.inPlace && fed > 0 && seqLen <= IN_PLACE_SLICE_TOKENS) {
      // In place, as a decode step: the slice's slots are written after the fed ones, the
      // buffer grown by a quarter when full; appending would copy the whole prefix every slice.
      cacheLengths = Int32Array.of(fed);
      const layout = this.inPlaceKv.layout(past, cacheLengths, seqLen);
      // Grown into new buffers (this thread's arrays): the old ones are garbage.
      if (layout.past !== past) freeReplacedKvBuffers(past, layout.past);
      past = layout.past;
      attentionMask = layout.attentionMask;
    } else if (past.length > fed) {
      // A large slice on a past with free slots (a kept prefix with room, earlier slices in
      // place): appended to an exact copy, so its attention does not also read the free slots.
      const exact = repackKvCache([{ cache: past, row: 0, realLength: fed }], fed, past, 'start');
      releaseKvCache(past);
      partial.cache = exact;
      past = exact;
    }
    let ran;
    try {
      ran = await this.decoder.run({
        batch: 1,
        seqLen,
        inputIds: BigInt64Array.from(promptTokenIds.slice(fed, end), (id) => BigInt(id)),
        positionIds: BigInt64Array.from({ length: seqLen }, (_, i) => BigInt(fed + i)),
        attentionMask,
        past,
        cacheLengths,
        logitsToKeep: 1,
        loraSlots: partial.loraSlot >= 0 ? [partial.loraSlot] : undefined,
      });
    } finally {
      if (partial.cache !== null) releaseKvCache(partial.cache);
      partial.cache = null;
    }
    this.lastCallMs = ran.computeMs ?? null;
    partial.cache = ran.present;
    partial.fed = end;
    if (end < promptTokenIds.length) return null;
    this.prefilled.push(ran.present);
    partial.reuse?.cache.insert(partial.reuse.namespace, promptTokenIds, ran.present, 0);
    const vocab = this.decoder.spec.vocabSize;
    return ran.logits.subarray(ran.logits.length - vocab);
  }

  /** Releases a partial prefill's KV (its request ended before its last slice). */
  dropPartialPrefill(partial: PartialPrefill): void {
    if (partial.cache !== null && !this.prefilled.includes(partial.cache)) releaseKvCache(partial.cache);
    partial.cache = null;
  }

  /** Whether this runner's graph may prefill prompts together (graphPrefillsTogether). */
  get prefillsTogether(): boolean {
    return graphPrefillsTogether(this.decoder);
  }

  /**
   * Prefills prompts (no adapters, no media, last-position logits only) in as few model calls
   * as fit: prompts of similar lengths share a call, each a row of one cache, right-padded to
   * the call's longest, its padding masked (prefillsTogether says for which graphs). Returns
   * per prompt its last position's logits and its row of its call's cache, which its rows
   * join the batch with, and the calls made. With 64 requests arriving together, their
   * one-row prefills were a quarter of the embedded model's time.
   */
  async prefillTogether(
    prompts: ReadonlyArray<readonly number[]>,
    reuse?: PrefixReuse,
  ): Promise<{ prefills: Array<{ logits: Float32Array; cache: KvCache; cacheRow: number }>; calls: number }> {
    const prefills: Array<{ logits: Float32Array; cache: KvCache; cacheRow: number }> = new Array(prompts.length);
    const bunches = promptBunches(prompts, this.decoder.spec.vocabSize);
    for (const bunch of bunches) {
      if (bunch.length === 1) {
        const { logits, cache } = await this.prefill(prompts[bunch[0]], false, undefined, -1, reuse);
        prefills[bunch[0]] = { logits: logits.subarray(logits.length - this.decoder.spec.vocabSize), cache, cacheRow: 0 };
        continue;
      }
      for (const index of bunch) reuse?.cache.countMiss(prompts[index]);
      const rows = await this.prefillRows(bunch.map((index) => prompts[index]));
      bunch.forEach((index, row) => {
        prefills[index] = rows[row];
        reuse?.cache.insert(reuse.namespace, prompts[index], rows[row].cache, rows[row].cacheRow);
      });
    }
    return { prefills, calls: bunches.length };
  }

  /** One model call for `prompts`, right-padded to the longest: per prompt its last position's logits and its cache row. */
  private async prefillRows(prompts: ReadonlyArray<readonly number[]>): Promise<Array<{ logits: Float32Array; cache: KvCache; cacheRow: number }>> {
    const input = rightPaddedPrompts(prompts, this.emptyCache(prompts.length));
    const { logits, present } = await this.decoder.run(input);
    this.prefilled.push(present);
    return lastRealLogits(logits, prompts, input.seqLen, this.decoder.spec.vocabSize).map((rowLogits, row) => ({ logits: rowLogits, cache: present, cacheRow: row }));
  }

  /**
   * Keeps a prefill's cache past the next admission (which releases every cache handed
   * out and not admitted): its request joins some steps later (scheduler.ts, "preparing").
   * The caller owns it until it hands it back with `returnPrefill`, or releases it.
   */
  holdPrefill(cache: KvCache): void {
    this.prefilled = this.prefilled.filter((each) => each !== cache);
  }

  /** A held prefill's cache, for the next admission: its rows join then, as any prefill's. */
  returnPrefill(cache: KvCache): void {
    this.prefilled.push(cache);
  }

  /**
   * Changes the batch's membership: drops finished rows, adds the last step's forks and
   * newly prefilled rows. Copies the cache only when membership changes.
   */
  admitAndEvict(joining: readonly JoiningRow[]): void {
    const forks = this.forks;
    // Runs before every step: the common case (nobody joins or leaves) must not allocate.
    const prefilled = this.prefilled;
    this.prefilled = [];
    if (forks.length === 0 && !joining.some(({ row }) => !row.finished) && !this.rows.some((row) => row.finished)) {
      prefilled.forEach(releaseKvCache);
      return;
    }
    this.keepFinishedRows();
    this.forks = [];

    const sources: KvRowSource[] = [];
    const rows: BatchRow[] = [];
    const groups: RowGroup[] = [];
    this.rows.forEach((row, index) => {
      if (row.finished) return;
      sources.push({ cache: this.cache, row: index, realLength: row.cachedLength });
      rows.push(row);
      groups.push(this.groups[index]);
    });
    for (const { row, group, cache, cacheRow } of [...forks, ...joining]) {
      if (row.finished) continue;
      sources.push({ cache, row: cacheRow, realLength: row.cachedLength });
      rows.push(row);
      groups.push(group);
    }
    // Padding nobody needs any more is dropped here too: the new length is the longest row.
    const length = sources.reduce((max, source) => Math.max(max, source.realLength), 0);
    this.rows = rows;
    this.groups = groups;
    const previous = this.cache;
    // One row joining an idle batch: its own prefill cache becomes the batch's when it has
    // room (a prefix hit's, see prefill), instead of a copy of it.
    const adopted = sources.length === 1 && sources[0].cache !== previous && sources[0].cache.batch === 1 && sources[0].row === 0 ? sources[0].cache : previous;
    if (rows.length === 0) this.cache = this.emptyCache(0);
    else if (this.inPlace) this.cache = this.inPlaceKv.compact(sources, adopted, length + 1);
    else this.cache = repackKvCache(sources, length, previous, this.padding);
    // Forks copied rows of the previous cache; joining rows, of their prefill's.
    for (const replaced of new Set([previous, ...prefilled, ...joining.map(({ cache }) => cache)])) {
      if (replaced === this.cache) continue;
      releaseKvCache(replaced);
      // The runner's in-place store and the prefills' caches were read by no one but this batch.
      if (this.inPlace) freeReplacedKvBuffers(replaced, this.cache);
    }
  }

  /**
   * Hands the finished rows' KV (prompt + the output fed so far) to the prefix cache, before
   * the repack drops them; the scheduler calls it before admitting prompts, so a chat's next
   * turn arriving as soon as the last one ended finds it.
   */
  keepFinishedRows(): void {
    if (this.keepFinished === null) return;
    this.rows.forEach((row, index) => {
      if (!row.finished || row.sequenceTokenIds === undefined || row.cachedLength <= 0 || this.keptRows.has(row)) return;
      this.keptRows.add(row);
      const reuse = this.keepFinished!(this.groups[index]);
      if (reuse === undefined) return;
      const ids = row.sequenceTokenIds();
      if (ids.length < row.cachedLength) return;
      const tokens = ids.slice(0, row.cachedLength);
      // The batch's only row, in place: the batch's cache itself is kept (the batch is empty
      // from now on), not a copy of it. A chat's next turn then takes it back (prefill).
      if (this.inPlace && this.rows.length === 1 && this.forks.length === 0 && this.cache.batch === 1 && reuse.cache.adopt(reuse.namespace, tokens, this.cache)) {
        this.cache = this.emptyCache(0);
        return;
      }
      // Real slots last in the row (left padding), or first (right padding, in-place caches).
      const end = this.padding === 'end' ? this.cache.length : row.cachedLength;
      reuse.cache.insert(reuse.namespace, tokens, this.cache, index, end);
    });
  }

  /**
   * In-place cache: room for `seqLen` more slots in every row, moving the cache into larger
   * buffers when a row would outgrow it; the mask and cache lengths of the step. Other
   * graphs: the mask over past + seqLen slots, no cache lengths.
   */
  private stepLayout(seqLen: number): { past: KvCache; attentionMask: BigInt64Array; cacheLengths?: Int32Array } {
    const { rows } = this;
    const batch = rows.length;
    if (this.inPlace) {
      const cacheLengths = new Int32Array(batch);
      for (let index = 0; index < batch; index++) cacheLengths[index] = rows[index].cachedLength;
      const outgrown = this.cache;
      const layout = this.inPlaceKv.layout(outgrown, cacheLengths, seqLen);
      this.cache = layout.past;
      // Grown into new buffers: the old ones are garbage unless a fork still reads them.
      if (this.cache !== outgrown && !this.forks.some((fork) => fork.cache === outgrown)) freeReplacedKvBuffers(outgrown, this.cache);
      return layout;
    }
    const past = this.cache;
    const total = past.length + seqLen;
    const attentionMask = new BigInt64Array(batch * total);
    // The real slots: the row's cached ones and the new ones.
    for (let index = 0; index < batch; index++) markRealSlots(attentionMask, index, total, rows[index].cachedLength + seqLen, this.padding);
    return { past, attentionMask };
  }

  /** One decode step for every row: feeds each one's last token, then lets each group pick its rows' next tokens. */
  async step(): Promise<number> {
    return (await this.launchStep())();
  }

  /**
   * A step in two halves: the model call is made (in worker mode: sent to the worker)
   * before this returns; the promise resolves once it has run, to the second half, which
   * lets each group pick its rows' next tokens and returns the tokens generated. Between
   * the halves the batch must not change (no admitAndEvict). Calling the second half as
   * soon as the promise resolves and then sending the next step before the event loop
   * runs the consumers is what lets a worker's model call overlap this thread's streaming.
   */
  launchStep(): Promise<() => number> {
    const batch = this.rows.length;
    if (batch === 0) return Promise.resolve(() => 0);
    const drafts = this.collectDrafts();
    if (drafts !== null) return this.launchSpeculative(drafts);
    return this.launchPlain();
  }

  private async launchSpeculative(drafts: readonly number[][]): Promise<() => number> {
    try {
      const generated = await this.speculativeStep(drafts);
      return () => generated;
    } catch (error) {
      // A model that cannot take several new tokens per row on a cache (some exports
      // cannot, in a batch) still decodes: the failed call changed nothing, so the
      // plain step below runs instead, and speculation stays off from now on.
      console.warn(`speculative decoding turned off: the model failed a multi-token step (${(error as Error).message})`);
      this.speculation = { ...this.speculation, mode: 'off' };
      return this.launchPlain();
    }
  }

  private launchPlain(): Promise<() => number> {
    const { rows } = this;
    const batch = rows.length;
    const { past, attentionMask, cacheLengths } = this.stepLayout(1);
    const inputIds = new BigInt64Array(batch);
    const positionIds = new BigInt64Array(batch);
    for (let index = 0; index < batch; index++) {
      const row = rows[index];
      inputIds[index] = BigInt(row.lastTokenId);
      positionIds[index] = BigInt(row.cachedLength);
    }
    const loraSlots = this.rowLoraSlots();
    const ran = this.decoder.run({ batch, seqLen: 1, inputIds, positionIds, attentionMask, past, loraSlots, cacheLengths });
    return ran.then(({ logits, present, computeMs }) => {
      this.lastCallMs = computeMs ?? null;
      const half = () => this.finishPlain(rows, past, logits, present);
      // Masks of grammars on another thread are usually there by now (computed while the model ran).
      const waiting = guidesPending(rows);
      return waiting === null ? half : waiting.then(() => half);
    });
  }

  private finishPlain(rows: readonly BatchRow[], past: KvCache, logits: Float32Array, present: KvCache): number {
    const batch = rows.length;
    this.cache = present;
    if (present !== past) releaseKvCache(past);
    const vocab = this.decoder.spec.vocabSize;
    const stepRows: StepRow[] = [];
    for (let index = 0; index < batch; index++) {
      const row = rows[index];
      row.cachedLength += 1;
      if (!row.finished) stepRows.push({ row, batchIndex: index, logits: logits.subarray(index * vocab, (index + 1) * vocab), consumed: 1 });
    }
    return this.advanceGroups(stepRows, present);
  }

  /**
   * Hands each group its unfinished rows of a step (all of a group's rows at once) and
   * queues the rows they fork for the next repack. Returns the tokens generated.
   */
  private advanceGroups(stepRows: readonly StepRow[], present: KvCache): number {
    const byGroup = new Map<RowGroup, StepRow[]>();
    for (const stepRow of stepRows) {
      if (stepRow.row.finished) continue;
      const group = this.groups[stepRow.batchIndex];
      const list = byGroup.get(group);
      if (list === undefined) byGroup.set(group, [stepRow]);
      else list.push(stepRow);
    }
    let generated = 0;
    for (const [group, groupRows] of byGroup) {
      let result;
      try {
        result = group.advance(groupRows);
      } catch (error) {
        // One request's sampling or grammar failing ends that request only; its rows
        // leave the batch at the next repack and every other request goes on.
        group.fail(error);
        continue;
      }
      generated += result.generated;
      for (const fork of result.forks) this.forks.push({ row: fork.row, group, cache: present, cacheRow: fork.parentBatchIndex });
    }
    return generated;
  }

  /**
   * Each row's guesses for a speculative step, or null for a plain step: speculation is
   * off, the batch is too large, a group (beam search) cannot take drafts, or nobody has
   * a guess (in "guided" mode only structured-output rows guess).
   */
  private collectDrafts(): number[][] | null {
    const { mode, numSpeculativeTokens, maxRows } = this.speculation;
    const { rows, groups } = this;
    if (mode === 'off' || numSpeculativeTokens <= 0 || rows.length > maxRows || this.forks.length > 0) return null;
    if (!groups.every((group) => group.acceptsDrafts === true)) return null;
    let any = false;
    const drafts = rows.map((row) => {
      const draft = row.finished ? [] : (row.draftTokens?.(numSpeculativeTokens, mode === 'guided') ?? []);
      if (draft.length > 0) any = true;
      return draft;
    });
    return any ? drafts : null;
  }

  /**
   * Feeds every row its last token and its guesses in one forward pass. Each group takes
   * tokens from the logits position by position while the guesses hold, so a row gains
   * 1 + (right guesses) tokens; the cache slots of wrong guesses are cut off afterwards.
   * Rows with fewer guesses than others are padded with repeats of their last token,
   * whose slots are cut off the same way.
   */
  private async speculativeStep(drafts: readonly number[][]): Promise<number> {
    const { rows } = this;
    const batch = rows.length;
    const seqLen = 1 + drafts.reduce((max, draft) => Math.max(max, draft.length), 0);
    const { past, attentionMask, cacheLengths } = this.stepLayout(seqLen);
    const total = past.length + seqLen;
    const inputIds = new BigInt64Array(batch * seqLen);
    const positionIds = new BigInt64Array(batch * seqLen);
    const lastPosition = this.decoder.spec.maxPositionEmbeddings - 1;
    for (let index = 0; index < batch; index++) {
      const row = rows[index];
      const draft = drafts[index];
      for (let position = 0; position < seqLen; position++) {
        const token = position === 0 ? row.lastTokenId : (draft[position - 1] ?? row.lastTokenId);
        inputIds[index * seqLen + position] = BigInt(token);
        // A row's padding repeats (cut off below) may run past the context near its end:
        // their position only has to exist.
        positionIds[index * seqLen + position] = BigInt(Math.min(row.cachedLength + position, lastPosition));
      }
    }
    const loraSlots = this.rowLoraSlots();
    const { logits, present } = await this.decoder.run({ batch, seqLen, inputIds, positionIds, attentionMask, past, loraSlots, cacheLengths });
    const waiting = guidesPending(rows);
    if (waiting !== null) await waiting;
    const vocab = this.decoder.spec.vocabSize;
    // Every row, finished ones included: each needs its cache row trimmed below.
    const stepRows: StepRow[] = rows.map((row, index) => {
      const rowLogits = logits.subarray(index * seqLen * vocab, (index + 1) * seqLen * vocab);
      // Checking guesses asks the grammar for masks at once: not while its thread compiles.
      const tokens = row.guideBusy?.() ? [] : drafts[index];
      return { row, batchIndex: index, logits: rowLogits.subarray(0, vocab), draft: { tokens, logits: rowLogits }, consumed: 1 };
    });
    const generated = this.advanceGroups(stepRows, present);
    if (this.inPlace) {
      // Slots of rejected guesses lie past each row's length: masked, and overwritten next step.
      for (const { row, consumed } of stepRows) row.cachedLength += consumed;
      this.cache = present;
      // The same buffers here; in worker mode a new handle on them, and the old one goes.
      if (present !== past) releaseKvCache(past);
      return generated;
    }

    let trimmed = false;
    const sources: KvRowSource[] = stepRows.map(({ row, consumed }, index) => {
      row.cachedLength += consumed;
      if (consumed < seqLen) trimmed = true;
      // Padded at the end: the rejected guesses are each row's last slots; at the start, the
      // row's real slots are its first cachedLength ones (repack's default).
      const end = this.padding === 'end' ? total - (seqLen - consumed) : undefined;
      return { cache: present, row: index, realLength: row.cachedLength, end };
    });
    const length = sources.reduce((max, source) => Math.max(max, source.realLength), 0);
    this.cache = trimmed ? repackKvCache(sources, length, present, this.padding) : present;
    releaseKvCache(past);
    if (trimmed) releaseKvCache(present);
    return generated;
  }

  /** Each row's LoRA slot, or undefined when the decoder has no LoRA graph (nothing to pick). */
  private rowLoraSlots(): number[] | undefined {
    if (!this.decoder.hasLora) return undefined;
    return this.groups.map((group) => group.loraSlot ?? -1);
  }

  /** Fails every group in the batch (the model threw) and empties it. */
  failAll(error: unknown): void {
    for (const group of new Set([...this.groups, ...this.forks.map((fork) => fork.group)])) group.fail(error);
    for (const cache of new Set([this.cache, ...this.prefilled, ...this.forks.map((fork) => fork.cache)])) releaseKvCache(cache);
    this.rows = [];
    this.groups = [];
    this.forks = [];
    this.prefilled = [];
    this.cache = this.emptyCache(0);
  }

  private emptyCache(batch: number): KvCache {
    const { spec } = this.decoder;
    return emptyKvCache(spec.numLayers, batch, spec.numKeyValueHeads, spec.headDim, this.decoder.contract.kvType);
  }
}

/**
 * Whether prompts may be prefilled together in one model call (BatchRunner.prefillTogether):
 * the converter's in-place graphs, whose mask sees key slot k from query slot q when k <= q
 * and the slot is real, so a right-padded row's real positions compute what they would alone;
 * in this thread or in the model's worker (the shared call's rows join the batch by row, as
 * any cache's rows do, there too); token ids in, and a num_logits_to_keep input (else every position's logits come back, rows × the longest
 * prompt × the vocabulary). The batching self-test probes only such graphs.
 */
export function graphPrefillsTogether(decoder: Decoder): boolean {
  const { contract } = decoder;
  return contract.kvOutputs === 'new' && contract.input === 'ids' && contract.logitsToKeepInput !== null;
}

/** Logits a shared prefill may return (rows × kept positions × vocabulary), in floats: 16 MB. */
const PREFILL_LOGITS_BUDGET = 4 * 1024 * 1024;

/**
 * Which prompts share a prefill call (indexes into `prompts`): by length, each call's longest
 * at most a quarter (plus 8 tokens) longer than its shortest, so padding wastes little, and
 * its logits (rows × the positions between its shortest and longest last one × vocabulary)
 * within PREFILL_LOGITS_BUDGET.
 */
export function promptBunches(prompts: ReadonlyArray<readonly number[]>, vocabSize: number): number[][] {
  const order = prompts.map((_, index) => index).sort((a, b) => prompts[a].length - prompts[b].length);
  const bunches: number[][] = [];
  let bunch: number[] = [];
  for (const index of order) {
    const shortest = bunch.length > 0 ? prompts[bunch[0]].length : prompts[index].length;
    const length = prompts[index].length;
    const fits = length <= shortest * 1.25 + 8 && (bunch.length + 1) * (length - shortest + 1) * vocabSize <= PREFILL_LOGITS_BUDGET;
    if (bunch.length > 0 && !fits) {
      bunches.push(bunch);
      bunch = [];
    }
    bunch.push(index);
  }
  if (bunch.length > 0) bunches.push(bunch);
  return bunches;
}

/**
 * Prompts as one prefill's input, each a row right-padded to the longest: the padding repeats
 * the row's last token at the next positions, masked (its slots are never read), and the
 * logits kept are the last (longest - shortest + 1) positions, where every row's last real one lies.
 */
export function rightPaddedPrompts(prompts: ReadonlyArray<readonly number[]>, past: KvCache): DecoderInput {
  const batch = prompts.length;
  const seqLen = prompts.reduce((longest, prompt) => Math.max(longest, prompt.length), 0);
  const shortest = prompts.reduce((least, prompt) => Math.min(least, prompt.length), seqLen);
  const inputIds = new BigInt64Array(batch * seqLen);
  const positionIds = new BigInt64Array(batch * seqLen);
  const attentionMask = new BigInt64Array(batch * seqLen);
  prompts.forEach((prompt, row) => {
    for (let position = 0; position < seqLen; position++) {
      const real = position < prompt.length;
      inputIds[row * seqLen + position] = BigInt(prompt[real ? position : prompt.length - 1]);
      positionIds[row * seqLen + position] = BigInt(position);
      attentionMask[row * seqLen + position] = real ? 1n : 0n;
    }
  });
  return { batch, seqLen, inputIds, positionIds, attentionMask, past, logitsToKeep: seqLen - shortest + 1 };
}

/** Each row's last real position's logits, from a right-padded prefill's output (the last positions of each row, as many as the graph returned). */
export function lastRealLogits(logits: Float32Array, prompts: ReadonlyArray<readonly number[]>, seqLen: number, vocab: number): Float32Array[] {
  const returned = logits.length / (prompts.length * vocab);
  return prompts.map((prompt, row) => {
    const start = (row * returned + prompt.length - 1 - (seqLen - returned)) * vocab;
    return logits.subarray(start, start + vocab);
  });
}
