import type { SamplingParams } from '../sampling/params.js';
import { promptLogprobs } from '../sampling/logprobs.js';
import { promptLogprobsInSlices } from './prompt-logprobs-slices.js';
import { createRng, SplitMix64 } from '../sampling/rng.js';
import type { Tokenizer } from '../tokenizer/types.js';
import type { LoraAdapter } from '../adapters/peft-adapter.js';
import { guidesPending, type BatchRow, type RowGroup, type StepResult, type StepRow } from './batch-row.js';
import { DeltaQueue } from './delta-queue.js';
import { Sequence, type SequenceLimits } from './sequence.js';
import type { GenerationDelta } from './types.js';
import type { PromptTokenLogprob } from '../sampling/logprobs.js';

/**
 * One request in the engine: its sequences, and the stream its client reads. The step
 * loop prefills the prompt once, hands the logits to `start`, and from then on runs the
 * group's rows in the shared batch.
 */
export interface RequestGroup extends RowGroup {
  readonly promptTokenIds: readonly number[];
  /** When the request was queued (Date.now()), for the admission deadline. */
  readonly enqueuedAt: number;
  /** Batch rows the request occupies once running (best_of, or the beam width). */
  readonly width: number;
  readonly deltas: DeltaQueue<GenerationDelta>;
  /** Every sequence ended: nothing more will be emitted. */
  readonly finished: boolean;
  /** Set when the client went away; the loop aborts the group before its next step. */
  abortRequested: boolean;
  /** The request asked for prompt logprobs, so the prefill must return every position's logits. */
  readonly needsPromptLogits: boolean;
  /** The client request it belongs to, shared by its other prompts' groups (GenerateRequest.requestKey); absent: its own. */
  requestKey?: object;
  /** The LoRA adapter the request runs with (null or absent: the base model), and its slot once admitted. */
  adapter?: LoraAdapter | null;
  loraSlot?: number;
  /** Prompt tokens whose KV came from the prefix cache (set at its prefill; vLLM's num_cached_tokens). */
  cachedPromptTokens?: number;
  /** When the scheduler admitted it (Date.now()): the end of its time in the queue. */
  admittedAt?: number;
  /**
   * Takes the prefill's logits (the group may overwrite them) and picks the first tokens:
   * [promptLength, vocab] when `needsPromptLogits`, else at least the last position's row,
   * which is the array's last `vocab` values. Returns the rows that go on; each continues the prompt's KV
   * cache (row 0 of the prefill's cache).
   */
  start(promptLogits: Float32Array): { rows: BatchRow[]; generated: number };
  /**
   * Work on the prefill's logits too long for one step (prompt logprobs), done in slices
   * that yield, before `start`: the scheduler steps other requests meanwhile and calls
   * `start` with the same logits once the promise settles (unless the request went away).
   * Null: nothing to do, `start` follows at once. Absent: the same.
   */
  prepare?(promptLogits: Float32Array): Promise<void> | null;
  /** Settles once the first token masks of its grammars (on another thread) are there; null when they are now. */
  guidesPending?(): Promise<void> | null;
  /** Ends every sequence because the client went away. */
  abort(): void;
  /** Ends every sequence because the model failed; the stream throws `error`. */
  fail(error: unknown): void;
}

/** Mixed into a request's seed to derive its other sequences' seeds (an arbitrary odd constant). */
const SEQUENCE_SEED_SALT = 0x5851f42d4c957f2dn;

/**
 * The seed of sequence `index` of a request seeded with `seed`: sequence 0 uses the seed
 * itself (so n = 1 samples exactly as before), the others draw theirs from a SplitMix64
 * stream keyed by the seed. Same seed, same n outputs; the sequences' streams start at
 * unrelated states, so they are not shifted copies of each other. No seed: undefined, a
 * fresh random seed per sequence.
 */
export function sequenceSeed(seed: bigint | undefined, index: number): bigint | undefined {
  if (seed === undefined || index === 0) return seed;
  const stream = new SplitMix64(seed ^ SEQUENCE_SEED_SALT);
  let derived = 0n;
  for (let i = 0; i < index; i++) derived = stream.nextUint64();
  return derived;
}

/** A delta that accumulates a whole sequence (best_of > n returns sequences only at the end). */
function mergeInto(total: GenerationDelta, delta: GenerationDelta): void {
  total.tokenIds.push(...delta.tokenIds);
  total.logprobs.push(...delta.logprobs);
  if (delta.topLogprobs !== undefined) (total.topLogprobs ??= []).push(...delta.topLogprobs);
  if (delta.promptLogprobs !== undefined) total.promptLogprobs = delta.promptLogprobs;
  total.text += delta.text;
  total.finishReason = delta.finishReason;
  total.stopReason = delta.stopReason;
  if (delta.cumulativeLogprob !== undefined) total.cumulativeLogprob = delta.cumulativeLogprob;
}

/**
 * n / best_of by random sampling (vLLM 0.6): best_of sequences (default n) share one
 * prefill, each draws its first token from the same last-position logits and goes on
 * independently with its own RNG. With best_of == n every delta streams as it comes;
 * with best_of > n the sequences are buffered and, once all are done, the n with the
 * highest cumulative logprob are emitted, re-indexed 0..n-1 in that order.
 */
export class SamplingGroup implements RequestGroup {
  readonly deltas = new DeltaQueue<GenerationDelta>();
  readonly acceptsDrafts = true;
  readonly enqueuedAt = Date.now();
  abortRequested = false;
  readonly width: number;

  private readonly n: number;
  private readonly sequences: Sequence[];
  /** Per sequence, when buffering (best_of > n): everything it emitted so far. */
  private readonly totals: GenerationDelta[] | null;
  private readonly sentPromptLogprobs: boolean[];
  private promptLogprobs: Array<PromptTokenLogprob | null> | null = null;
  /**
   * While a speculative step gives one sequence several tokens, its deltas merge here and
   * leave as one, like every other step's: one chunk per step and sequence, as vLLM streams.
   */
  private holding = false;
  private held: GenerationDelta | null = null;
  private unfinished: number;
  private failed = false;

  constructor(
    readonly promptTokenIds: readonly number[],
    readonly params: SamplingParams,
    tokenizer: Tokenizer,
    private readonly limits: SequenceLimits,
  ) {
    this.n = params.n ?? 1;
    this.width = Math.max(params.bestOf ?? this.n, this.n);
    this.unfinished = this.width;
    this.sentPromptLogprobs = new Array<boolean>(this.width).fill(false);
    this.totals =
      this.width > this.n
        ? Array.from({ length: this.width }, (_, index) => ({
            index,
            tokenIds: [],
            logprobs: [],
            text: '',
            finishReason: null,
            stopReason: null,
            cumulativeLogprob: 0,
          }))
        : null;
    this.sequences = Array.from(
      { length: this.width },
      (_, index) =>
        new Sequence(index, promptTokenIds, params, tokenizer, limits, {
          // Unseeded: the sampler draws a random seed when it first samples (greedy never does).
          rng: params.seed === undefined ? undefined : createRng(sequenceSeed(params.seed, index)),
          sink: { emit: (delta) => this.onDelta(delta), fail: (error) => this.fail(error) },
        }),
    );
  }

  get needsPromptLogits(): boolean {
    return this.params.promptLogprobs !== undefined;
  }

  get finished(): boolean {
    return this.failed || this.unfinished === 0;
  }

  guidesPending(): Promise<void> | null {
    return guidesPending(this.sequences);
  }

  prepare(promptLogits: Float32Array): Promise<void> | null {
    // A grammar on another thread: its first mask must be there before start() samples.
    const guides = guidesPending(this.sequences);
    const k = this.params.promptLogprobs;
    if (k === undefined) return guides;
    const logprobs = promptLogprobsInSlices(promptLogits, this.promptTokenIds, this.limits.vocabSize, k, () => this.abortRequested || this.finished).then(
      (computed) => {
        this.promptLogprobs = computed;
      },
    );
    return guides === null ? logprobs : Promise.all([logprobs, guides]).then(() => undefined);
  }

  start(promptLogits: Float32Array): { rows: BatchRow[]; generated: number } {
    const { vocabSize } = this.limits;
    const length = this.promptTokenIds.length;
    // Computed here only when the caller did not prepare (the scheduler always does).
    if (this.params.promptLogprobs !== undefined && this.promptLogprobs === null) {
      this.promptLogprobs = promptLogprobs(promptLogits, this.promptTokenIds, vocabSize, this.params.promptLogprobs);
    }
    const last = promptLogits.subarray(promptLogits.length - vocabSize);
    let generated = 0;
    for (const sequence of this.sequences) {
      if (this.finished) break;
      sequence.cachedLength = length;
      // Sampling overwrites its row: every sequence but one gets a copy.
      sequence.step(sequence.index === this.width - 1 ? last : last.slice());
      generated += 1;
    }
    return { rows: this.sequences.filter((sequence) => !sequence.finished), generated };
  }

  advance(rows: readonly StepRow[]): StepResult {
    if (this.abortRequested) {
      this.abort();
      return { generated: 0, forks: [] };
    }
    let generated = 0;
    for (const stepRow of rows) {
      const sequence = stepRow.row as Sequence;
      if (sequence.finished || this.failed) continue;
      const { draft } = stepRow;
      if (draft === undefined) {
        sequence.step(stepRow.logits);
        generated += 1;
        continue;
      }
      // Speculative step: position j's logits are exactly what a plain step would see as
      // long as every guess before j was the token actually chosen, so the sequence
      // samples them in order, with its own processors and RNG, and stops at the first
      // guess that differs. Output is the same as without guesses; only the number of
      // model calls changes.
      const { vocabSize } = this.limits;
      let consumed = 0;
      this.holding = true;
      try {
        for (;;) {
          const logits = draft.logits.subarray(consumed * vocabSize, (consumed + 1) * vocabSize);
          const { tokenIds } = sequence.step(logits);
          consumed += 1;
          generated += 1;
          if (sequence.finished || this.failed || consumed > draft.tokens.length) break;
          if (tokenIds[0] !== draft.tokens[consumed - 1]) break;
        }
      } finally {
        this.holding = false;
        const held = this.held;
        this.held = null;
        if (held !== null && !this.failed) this.publish(held);
      }
      stepRow.consumed = consumed;
      if (draft.tokens.length > 0) sequence.draftOutcome(consumed - 1);
    }
    return { generated, forks: [] };
  }

  abort(): void {
    for (const sequence of this.sequences) if (!sequence.finished) sequence.abort();
  }

  fail(error: unknown): void {
    if (this.finished) return;
    this.failed = true;
    for (const sequence of this.sequences) sequence.discard();
    this.deltas.fail(error);
  }

  private onDelta(delta: GenerationDelta): void {
    if (this.failed) return;
    if (this.promptLogprobs !== null && !this.sentPromptLogprobs[delta.index]) {
      delta.promptLogprobs = this.promptLogprobs;
      this.sentPromptLogprobs[delta.index] = true;
    }
    if (this.holding) {
      if (this.held === null) this.held = delta;
      else mergeInto(this.held, delta);
      return;
    }
    this.publish(delta);
  }

  private publish(delta: GenerationDelta): void {
    if (this.totals === null) this.deltas.push(delta);
    else mergeInto(this.totals[delta.index], delta);
    if (delta.finishReason === null) return;
    this.unfinished -= 1;
    if (this.unfinished > 0) return;
    if (this.totals !== null) this.emitBest(this.totals);
    this.deltas.close();
  }

  /** vLLM 0.6: the n sequences with the highest cumulative logprob, best first. */
  private emitBest(totals: GenerationDelta[]): void {
    const ranked = [...totals].sort(
      (a, b) => (b.cumulativeLogprob ?? 0) - (a.cumulativeLogprob ?? 0) || a.index - b.index,
    );
    ranked.slice(0, this.n).forEach((total, index) => this.deltas.push({ ...total, index }));
  }
}
