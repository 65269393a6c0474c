import { sharedStopIdSet } from '../sampling/shared-id-sets.js';
import { promptLogprobs, topLogprobs, topTokenIds } from '../sampling/logprobs.js';
import { promptLogprobsInSlices } from './prompt-logprobs-slices.js';
import type { SamplingParams } from '../sampling/params.js';
import { Sampler } from '../sampling/sampler.js';
import type { Tokenizer } from '../tokenizer/types.js';
import type { BatchRow, RowFork, StepResult, StepRow } from './batch-row.js';
import { DeltaQueue } from './delta-queue.js';
import type { RequestGroup } from './sequence-group.js';
import { Sequence, type SequenceLimits } from './sequence.js';
import type { FinishReason, GenerationDelta } from './types.js';
import type { PromptTokenLogprob, TokenLogprob } from '../sampling/logprobs.js';

/**
 * vLLM 0.6's beam score (Sequence.get_beam_search_score, after HF): the cumulative
 * logprob divided by length^length_penalty, where the length counts the prompt and the
 * output but not a final EOS token.
 */
export function beamSearchScore(cumulativeLogprob: number, sequenceLength: number, lengthPenalty: number): number {
  return cumulativeLogprob / sequenceLength ** lengthPenalty;
}

/** A live beam: one row of the batch. */
class Beam implements BatchRow {
  cachedLength = 0;
  finished = false;

  constructor(
    readonly promptTokenIds: readonly number[],
    readonly outputTokenIds: number[],
    readonly logprobs: number[],
    readonly topLogprobs: TokenLogprob[][] | null,
    public cumulativeLogprob: number,
    /** Its own, for the penalties: they depend on the beam's output. */
    readonly sampler: Sampler,
  ) {}

  get lastTokenId(): number {
    return this.outputTokenIds[this.outputTokenIds.length - 1];
  }
}

/** A beam extended by one token, before the search decides what becomes of it. */
interface Candidate {
  parent: Beam;
  tokenId: number;
  logprob: number;
  cumulativeLogprob: number;
  /** The parent's step alternatives (params.logprobs), shared by its candidates. */
  top: TokenLogprob[] | null;
  score: number;
  finish: { reason: FinishReason; stopReason: string | number | null } | null;
}

/** A finished beam, kept while it is among the best `width`. */
interface Hypothesis {
  outputTokenIds: number[];
  logprobs: number[];
  topLogprobs: TokenLogprob[][] | null;
  cumulativeLogprob: number;
  score: number;
  finishReason: FinishReason;
  stopReason: string | number | null;
}

const byScore = (a: { score: number }, b: { score: number }) => b.score - a.score;

/**
 * Beam search as vLLM 0.6 runs it in its engine (sampler `_beam_search_sample` plus the
 * output processor), with beam width = best_of (default n):
 *
 * - each step, every live beam proposes its 2·width best next tokens (log-softmax after
 *   the penalties; temperature is 0), scored by cumulative logprob; the best 2·width
 *   over all beams are the candidates;
 * - candidates that end (EOS, a stop token or stop string, max_tokens, the context) join
 *   the finished hypotheses, of which the best `width` by beam score are kept;
 * - the best `width` unfinished candidates by beam score are the next live beams, unless
 *   the search stops: no live candidate, or (with at least `width` finished) the
 *   early_stopping rule says no live beam can still beat the worst kept hypothesis.
 *
 * The n best hypotheses are returned at the end, best first, each as one delta. Beams
 * ride the shared batch: a beam continuing in several ways forks its KV row.
 */
export class BeamSearchGroup implements RequestGroup {
  readonly deltas = new DeltaQueue<GenerationDelta>();
  readonly enqueuedAt = Date.now();
  abortRequested = false;
  readonly width: number;

  private readonly n: number;
  private readonly lengthPenalty: number;
  private readonly eosTokenIds: ReadonlySet<number>;
  private readonly stopTokenIds: ReadonlySet<number>;
  /** The best finished beams so far (at most `width`), best first. */
  private hypotheses: Hypothesis[] = [];
  /** The beams in the batch. */
  private live: Beam[] = [];
  private promptLogprobs: Array<PromptTokenLogprob | null> | null = null;
  private done = false;

  constructor(
    readonly promptTokenIds: readonly number[],
    readonly params: SamplingParams,
    private readonly tokenizer: Tokenizer,
    private readonly limits: SequenceLimits,
  ) {
    this.n = params.n ?? 1;
    this.width = Math.max(params.bestOf ?? this.n, this.n);
    this.lengthPenalty = params.lengthPenalty ?? 1;
    this.eosTokenIds = new Set(limits.eosTokenIds);
    this.stopTokenIds = sharedStopIdSet(params.stopTokenIds);
  }

  get needsPromptLogits(): boolean {
    return this.params.promptLogprobs !== undefined;
  }

  get finished(): boolean {
    return this.done;
  }

  /** Prompt logprobs in slices (see RequestGroup.prepare). */
  prepare(promptLogits: Float32Array): Promise<void> | null {
    const k = this.params.promptLogprobs;
    if (k === undefined) return null;
    return promptLogprobsInSlices(promptLogits, this.promptTokenIds, this.limits.vocabSize, k, () => this.abortRequested || this.done).then(
      (computed) => {
        this.promptLogprobs = computed;
      },
    );
  }

  start(promptLogits: Float32Array): { rows: BatchRow[]; generated: number } {
    const { vocabSize } = this.limits;
    const length = this.promptTokenIds.length;
    if (this.params.promptLogprobs !== undefined && this.promptLogprobs === null) {
      this.promptLogprobs = promptLogprobs(promptLogits, this.promptTokenIds, vocabSize, this.params.promptLogprobs);
    }
    // The prompt is the one beam the first step expands; its KV row is the prefill's row 0.
    const root = new Beam(this.promptTokenIds, [], [], this.params.logprobs !== undefined ? [] : null, 0, this.newSampler());
    root.cachedLength = length;
    const forks = this.expand([{ row: root, batchIndex: 0, logits: promptLogits.subarray(promptLogits.length - vocabSize), consumed: 1 }], false);
    return { rows: forks.map((fork) => fork.row), generated: 1 };
  }

  advance(rows: readonly StepRow[]): StepResult {
    if (this.done) return { generated: 0, forks: [] };
    if (this.abortRequested) {
      this.abort();
      return { generated: 0, forks: [] };
    }
    return { generated: rows.length, forks: this.expand(rows, true) };
  }

  abort(): void {
    if (this.done) return;
    this.retireBeams();
    this.done = true;
    for (let index = 0; index < this.n; index++) {
      this.deltas.push({ index, tokenIds: [], logprobs: [], text: '', finishReason: 'abort', stopReason: null });
    }
    this.deltas.close();
  }

  fail(error: unknown): void {
    if (this.done) return;
    this.retireBeams();
    this.done = true;
    this.deltas.fail(error);
  }

  private retireBeams(): void {
    for (const beam of this.live) beam.finished = true;
    this.live = [];
  }

  /**
   * One step of the search over the parents' logits. `inBatch`: the parents are rows of
   * the batch (a parent's first surviving child continues its row in place); the prompt
   * is not, so all its children fork from its cache.
   */
  private expand(parents: readonly StepRow[], inBatch: boolean): RowFork[] {
    const candidates = this.proposeCandidates(parents);

    const finishedNow: Hypothesis[] = candidates.filter((c) => c.finish !== null).map((c) => this.hypothesisOf(c));
    // Existing hypotheses first: on equal scores they win, as in vLLM's stable sort.
    const allFinished = [...this.hypotheses, ...finishedNow].sort(byScore);
    this.hypotheses = allFinished.slice(0, this.width);
    const running = candidates.filter((c) => c.finish === null).sort(byScore);

    if (this.shouldStop(running, allFinished.length)) {
      for (const { row } of parents) (row as Beam).finished = true;
      this.live = [];
      this.emitResults();
      return [];
    }

    const selected = running.slice(0, this.width);
    const forks: RowFork[] = [];
    const continuing = new Map<Beam, Candidate>();
    const batchIndexOf = new Map<Beam, number>(parents.map(({ row, batchIndex }) => [row as Beam, batchIndex]));
    // Forks copy their parent before any parent is extended in place.
    for (const candidate of selected) {
      if (inBatch && !continuing.has(candidate.parent)) {
        continuing.set(candidate.parent, candidate);
        continue;
      }
      forks.push({ row: this.forkOf(candidate), parentBatchIndex: batchIndexOf.get(candidate.parent)! });
    }
    for (const { row } of parents) {
      const beam = row as Beam;
      const candidate = continuing.get(beam);
      if (candidate === undefined) beam.finished = true;
      else this.extend(beam, candidate);
    }
    this.live = [...continuing.keys(), ...forks.map((fork) => fork.row as Beam)];
    return forks;
  }

  /** The 2·width best (beam, token) extensions by cumulative logprob. */
  private proposeCandidates(parents: readonly StepRow[]): Candidate[] {
    const perBeam = 2 * this.width;
    const candidates: Candidate[] = [];
    for (const { row, logits } of parents) {
      const beam = row as Beam;
      const scores = beam.sampler.logprobs(logits, beam);
      const top = this.params.logprobs !== undefined ? topLogprobs(scores, this.params.logprobs) : null;
      for (const tokenId of topTokenIds(scores, perBeam)) {
        const logprob = scores[tokenId];
        const cumulativeLogprob = beam.cumulativeLogprob + logprob;
        const outputLength = beam.outputTokenIds.length + 1;
        candidates.push({
          parent: beam,
          tokenId,
          logprob,
          cumulativeLogprob,
          top,
          score: this.score(cumulativeLogprob, outputLength, tokenId),
          finish: null,
        });
      }
    }
    // Stable: on equal cumulative logprobs the earlier beam, then the lower token id, goes first.
    candidates.sort((a, b) => b.cumulativeLogprob - a.cumulativeLogprob);
    const kept = candidates.slice(0, perBeam);
    for (const candidate of kept) candidate.finish = this.finishOf(candidate);
    return kept;
  }

  private score(cumulativeLogprob: number, outputLength: number, lastTokenId: number): number {
    const length = this.promptTokenIds.length + outputLength - (this.eosTokenIds.has(lastTokenId) ? 1 : 0);
    return beamSearchScore(cumulativeLogprob, length, this.lengthPenalty);
  }

  /** vLLM 0.6's `_check_beam_search_early_stopping`, with its preconditions. */
  private shouldStop(running: readonly Candidate[], finishedCount: number): boolean {
    if (running.length === 0) return true;
    if (finishedCount < this.width) return false;
    const earlyStopping = this.params.earlyStopping ?? false;
    if (earlyStopping === true) return true;
    const worstKept = this.hypotheses[this.width - 1].score;
    const best = running[0];
    let bestAttainable = best.score;
    if (earlyStopping === 'never' && this.lengthPenalty > 0) {
      // Longer is better with a positive penalty: the best a live beam can reach is at the longest length.
      const longest = Math.max(this.promptTokenIds.length + this.params.maxTokens, this.limits.maxModelLen);
      bestAttainable = beamSearchScore(best.cumulativeLogprob, longest, this.lengthPenalty);
    }
    return worstKept >= bestAttainable;
  }

  /** Whether appending the candidate's token ends the beam, by the same rules as a sampled sequence. */
  private finishOf(candidate: Candidate): Candidate['finish'] {
    const { parent, tokenId } = candidate;
    const outputLength = parent.outputTokenIds.length + 1;
    if (this.params.stop.length > 0) {
      // Stop strings need the text: replay the beam through the sequence output rules.
      const last = this.replay([...parent.outputTokenIds, tokenId], parent.logprobs).at(-1)!;
      return last.finishReason === null ? null : { reason: last.finishReason, stopReason: last.stopReason };
    }
    if (outputLength >= this.params.minTokens) {
      if (!this.params.ignoreEos && this.eosTokenIds.has(tokenId)) return { reason: 'stop', stopReason: null };
      if (this.stopTokenIds.has(tokenId)) return { reason: 'stop', stopReason: tokenId };
    }
    if (outputLength >= this.params.maxTokens || this.promptTokenIds.length + outputLength >= this.limits.maxModelLen) {
      return { reason: 'length', stopReason: null };
    }
    return null;
  }

  private hypothesisOf(candidate: Candidate): Hypothesis {
    const { parent } = candidate;
    return {
      outputTokenIds: [...parent.outputTokenIds, candidate.tokenId],
      logprobs: [...parent.logprobs, candidate.logprob],
      topLogprobs: parent.topLogprobs && [...parent.topLogprobs, candidate.top!],
      cumulativeLogprob: candidate.cumulativeLogprob,
      score: candidate.score,
      finishReason: candidate.finish!.reason,
      stopReason: candidate.finish!.stopReason,
    };
  }

  private forkOf(candidate: Candidate): Beam {
    const { parent } = candidate;
    const beam = new Beam(
      this.promptTokenIds,
      [...parent.outputTokenIds, candidate.tokenId],
      [...parent.logprobs, candidate.logprob],
      parent.topLogprobs && [...parent.topLogprobs, candidate.top!],
      candidate.cumulativeLogprob,
      this.newSampler(),
    );
    beam.cachedLength = parent.cachedLength;
    return beam;
  }

  private extend(beam: Beam, candidate: Candidate): void {
    beam.outputTokenIds.push(candidate.tokenId);
    beam.logprobs.push(candidate.logprob);
    beam.topLogprobs?.push(candidate.top!);
    beam.cumulativeLogprob = candidate.cumulativeLogprob;
  }

  private newSampler(): Sampler {
    return new Sampler(this.params, { vocabSize: this.limits.vocabSize, eosTokenIds: this.limits.eosTokenIds });
  }

  /** Runs tokens through a sequence's output rules (detokenizer, stop checks): its deltas. */
  private replay(tokenIds: readonly number[], logprobs: readonly number[]): GenerationDelta[] {
    const deltas: GenerationDelta[] = [];
    const sequence = new Sequence(0, this.promptTokenIds, { ...this.params, guide: undefined }, this.tokenizer, this.limits, {
      sink: { emit: (delta) => deltas.push(delta), fail: () => {} },
    });
    for (let i = 0; i < tokenIds.length && !sequence.finished; i++) sequence.append(tokenIds[i], logprobs[i] ?? 0);
    return deltas;
  }

  /** The n best hypotheses, best first, one delta each. */
  private emitResults(): void {
    this.done = true;
    this.hypotheses.slice(0, this.n).forEach((hypothesis, index) => {
      const text = this.replay(hypothesis.outputTokenIds, hypothesis.logprobs)
        .map((delta) => delta.text)
        .join('');
      const delta: GenerationDelta = {
        index,
        tokenIds: hypothesis.outputTokenIds,
        logprobs: hypothesis.logprobs,
        text,
        finishReason: hypothesis.finishReason,
        stopReason: hypothesis.stopReason,
        cumulativeLogprob: hypothesis.cumulativeLogprob,
      };
      if (hypothesis.topLogprobs !== null) delta.topLogprobs = hypothesis.topLogprobs;
      if (this.promptLogprobs !== null) delta.promptLogprobs = this.promptLogprobs;
      this.deltas.push(delta);
    });
    this.deltas.close();
  }
}
