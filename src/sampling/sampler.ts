import { sharedBannedIds } from './shared-id-sets.js';
import type { TokenLogprob } from './logprobs.js';
import type { LogitsMask } from '../guided/guide.js';
import type { LogitsProcessor } from './logits-processor.js';
import { DEFAULT_LOGPROBS_MODE, isGreedy, type LogprobsMode, type SamplingParams } from './params.js';
import { LogitBiasProcessor } from './processors/logit-bias.js';
import { MinPProcessor } from './processors/min-p.js';
import { MinTokensProcessor } from './processors/min-tokens.js';
import { PresenceFrequencyPenaltyProcessor } from './processors/presence-frequency-penalty.js';
import { RepetitionPenaltyProcessor } from './processors/repetition-penalty.js';
import { TemperatureProcessor } from './processors/temperature.js';
import { TopKProcessor } from './processors/top-k.js';
import { TopPProcessor } from './processors/top-p.js';
import { logSoftmaxInPlace, logSumExp, topLogprobs } from './logprobs.js';
import { createRng, type Rng } from './rng.js';
import { scratchFloat32, scratchFloat64 } from './scratch.js';
import { TokenHistory, type SequenceHistory } from './token-history.js';

export type { SequenceHistory } from './token-history.js';

export interface SamplerOptions {
  /** Length of every logits row passed to `sample`. */
  vocabSize: number;
  /** The model's EOS ids; banned while fewer than minTokens tokens were generated. */
  eosTokenIds: readonly number[];
  /** Defaults to createRng(params.seed). */
  rng?: Rng;
  /** The sequence's guided-decoding state: applied first, as vLLM applies logits processors before penalties. */
  guide?: LogitsMask;
  /**
   * false: nobody reads the sampled token's logprob (see `tokenLogprobNeeded`), so greedy
   * decoding skips the softmax and reports NaN. Default true.
   */
  tokenLogprob?: boolean;
}

/**
 * Whether a sequence's token logprobs are read: the request asked for logprobs, or
 * best_of > n ranks its sequences by cumulative logprob. Nothing else reports them.
 */
export function tokenLogprobNeeded(params: Pick<SamplingParams, 'logprobs' | 'n' | 'bestOf'>): boolean {
  const n = params.n ?? 1;
  return params.logprobs !== undefined || (params.bestOf ?? n) > n;
}

export interface SampledToken {
  tokenId: number;
  /**
   * Log-probability of tokenId under the distribution params.logprobsMode names (by
   * default the raw model distribution, as current vLLM; a score itself in the "_logits"
   * modes). NaN for greedy decoding when the sampler was told nobody reads it
   * (`tokenLogprob`): it then skips the softmax over the vocabulary.
   */
  logprob: number;
  /**
   * With params.logprobs set: that many most likely tokens under the same distribution,
   * best first (tokens banned there are left out).
   */
  topLogprobs?: TokenLogprob[];
}

/**
 * Picks the next token of one sequence. Create one per sequence and call `sample` once per
 * step; it keeps the token counts the penalties need, updated incrementally from `history`
 * (only tokens appended since the last call are looked at). Calling `accept` with each
 * token as it is appended is optional and consistent with that: nothing is counted twice.
 *
 * Pipeline, in current vLLM's order (its V1 sampler): the structured-output mask → (the raw
 * scores, for the "raw_" logprobs modes) → logit_bias → min_tokens ban → repetition penalty →
 * presence/frequency penalties → temperature → min-p → top-k → top-p → draw. (vLLM 0.6 ran
 * min-p last; min-p before top-p changes which tokens top-p keeps.) Greedy decoding
 * (temperature below GREEDY_TEMPERATURE_EPSILON) stops after the penalties and takes the
 * argmax, lowest id on ties; like vLLM it ignores temperature, top-k, top-p and min-p.
 */
export class Sampler {
  private readonly history = new TokenHistory();
  private readonly processors: LogitsProcessor[] = [];
  private readonly greedy: boolean;
  /**
   * Whether `sample` computes the token's logprob. Without it a greedy step is one argmax
   * pass (the softmax's exp per vocabulary entry is most of a greedy step's cost on large
   * vocabularies); random sampling needs the weights for its draw either way.
   */
  readonly reportsLogprob: boolean;
  private readonly vocabSize: number;
  private rng: Rng | undefined;
  private readonly guide: LogitsMask | undefined;
  private readonly logprobsMode: LogprobsMode;

  constructor(
    private readonly params: SamplingParams,
    options: SamplerOptions,
  ) {
    const { vocabSize } = options;
    this.vocabSize = vocabSize;
    this.greedy = isGreedy(params);
    this.reportsLogprob = options.tokenLogprob ?? true;
    this.rng = options.rng;
    this.guide = options.guide;
    this.logprobsMode = params.logprobsMode ?? DEFAULT_LOGPROBS_MODE;

    if (params.logitBias !== undefined && params.logitBias.size > 0) {
      this.processors.push(new LogitBiasProcessor(params.logitBias));
    }
    if (params.minTokens > 0) {
      this.processors.push(
        new MinTokensProcessor(params.minTokens, sharedBannedIds(options.eosTokenIds, params.stopTokenIds, vocabSize)),
      );
    }
    if (params.repetitionPenalty !== 1) {
      this.processors.push(new RepetitionPenaltyProcessor(params.repetitionPenalty));
    }
    if (params.presencePenalty !== 0 || params.frequencyPenalty !== 0) {
      this.processors.push(
        new PresenceFrequencyPenaltyProcessor(params.presencePenalty, params.frequencyPenalty),
      );
    }
    if (this.greedy) return;
    if (params.temperature !== 1) this.processors.push(new TemperatureProcessor(params.temperature));
    // vLLM applies min-p (an "argmax-invariant" logits processor) before its top-k / top-p step.
    if (params.minP > 0) this.processors.push(new MinPProcessor(params.minP));
    if (params.topK > 0 && params.topK < vocabSize) {
      this.processors.push(new TopKProcessor(params.topK));
    }
    if (params.topP < 1) this.processors.push(new TopPProcessor(params.topP));
  }

  /** Whether reported logprobs come from the scores before the processors. */
  private get rawLogprobs(): boolean {
    return this.logprobsMode === 'raw_logprobs' || this.logprobsMode === 'raw_logits';
  }

  /** Whether reported values are log-softmax normalised (else the scores themselves). */
  private get normalisedLogprobs(): boolean {
    return this.logprobsMode === 'raw_logprobs' || this.logprobsMode === 'processed_logprobs';
  }

  /**
   * Chooses the next token. Mutates `logits` (one row, length vocabSize): afterwards it
   * holds the processed scores the token was drawn from. `history.outputTokenIds` must be
   * append-only across calls for one sequence (a shorter one is treated as a restart).
   */
  sample(logits: Float32Array, history: SequenceHistory): SampledToken {
    // The raw scores are kept only when someone reads a logprob: one copy of the row.
    const reported = this.reportsLogprob || this.params.logprobs !== undefined;
    const raw = reported && this.rawLogprobs ? scratchFloat32('raw', logits.length).subarray(0, logits.length) : undefined;
    this.process(logits, history, raw);

    // Argmax with the lowest id on ties (strict ">"); NaN entries never win.
    let argmax = 0;
    let max = -Infinity;
    for (let i = 0; i < logits.length; i++) {
      if (logits[i] > max) {
        max = logits[i];
        argmax = i;
      }
    }
    if (max === Infinity) {
      // A processor overflowed float32 (a penalty or temperature near its bound on an
      // extreme logit): the distribution's limit is uniform over the infinite entries.
      for (let i = 0; i < logits.length; i++) logits[i] = logits[i] === Infinity ? 0 : -Infinity;
      max = 0;
    }
    if (!(max > -Infinity)) {
      // Only a stop token fits the grammar but min_tokens bans it: the grammar wins.
      const forced = this.guide?.firstAllowedToken() ?? -1;
      if (forced >= 0) {
        const forcedToken: SampledToken = { tokenId: forced, logprob: 0 };
        if (this.params.logprobs !== undefined) forcedToken.topLogprobs = this.params.logprobs > 0 ? [{ tokenId: forced, logprob: 0 }] : [];
        return raw === undefined ? forcedToken : this.sampled(forced, raw, this.normalizer(raw));
      }
      throw new Error(`cannot sample: no finite logit (max is ${max})`);
    }
    if (this.greedy) {
      if (!this.reportsLogprob && this.params.logprobs === undefined) return { tokenId: argmax, logprob: NaN };
      if (raw !== undefined) return this.sampled(argmax, raw, this.normalizer(raw));
      if (!this.normalisedLogprobs) return this.sampled(argmax, logits, 0);
      // The same sum, in the same order, as the weights below: the same logprob, no writes.
      let total = 0;
      for (let i = 0; i < logits.length; i++) {
        const logit = logits[i];
        total += logit > -Infinity ? Math.exp(logit - max) : 0;
      }
      return this.sampled(argmax, logits, max + Math.log(total));
    }
    // Unnormalised probabilities, kept for the draw; banned (and NaN) tokens skip the exp.
    const weights = scratchFloat64('weights', logits.length);
    let total = 0;
    for (let i = 0; i < logits.length; i++) {
      const logit = logits[i];
      const w = logit > -Infinity ? Math.exp(logit - max) : 0;
      weights[i] = w;
      total += w;
    }
    const tokenId = this.draw(weights, logits.length, total);
    if (raw !== undefined) return this.sampled(tokenId, raw, this.normalizer(raw));
    return this.sampled(tokenId, logits, this.normalisedLogprobs ? max + Math.log(total) : 0);
  }

  /** What the reported values of `row` are relative to: its log-sum-exp, or 0 in the "_logits" modes. */
  private normalizer(row: Float32Array): number {
    return this.normalisedLogprobs ? logSumExp(row) : 0;
  }

  /** The drawn token with its logprob (and top alternatives when asked) under `normalizer`. */
  private sampled(tokenId: number, logits: Float32Array, normalizer: number): SampledToken {
    const sampled: SampledToken = { tokenId, logprob: logits[tokenId] - normalizer };
    if (this.params.logprobs !== undefined) sampled.topLogprobs = topLogprobs(logits, this.params.logprobs, normalizer);
    return sampled;
  }

  /**
   * Beam search's view of a step: runs the same processors as `sample` (for beam search,
   * temperature 0: the guide, min_tokens and the penalties) and replaces `logits` with the
   * log-softmax of the result, without drawing anything.
   */
  logprobs(logits: Float32Array, history: SequenceHistory): Float32Array {
    this.process(logits, history);
    return logSoftmaxInPlace(logits);
  }

  /**
   * The guide's mask, then the processors, in place: what `sample` and `logprobs` both
   * start from. `raw`, when given, receives the scores in between (vLLM's raw logits:
   * the grammar's bitmask is applied before its sampler sees them).
   */
  private process(logits: Float32Array, history: SequenceHistory, raw?: Float32Array): void {
    if (logits.length !== this.vocabSize) {
      throw new RangeError(`expected ${this.vocabSize} logits, got ${logits.length}`);
    }
    this.history.sync(history);
    this.guide?.maskLogits(logits);
    raw?.set(logits);
    for (const processor of this.processors) processor.process(logits, this.history);
  }

  /** Tells the sampler `tokenId` was appended to the sequence's outputTokenIds. */
  accept(tokenId: number): void {
    this.history.append(tokenId);
  }

  /** Inverse-CDF draw from unnormalised probabilities `weights[0, n)` summing to `total`. */
  private draw(weights: Float64Array, n: number, total: number): number {
    this.rng ??= createRng(this.params.seed);
    const target = this.rng.nextFloat() * total;
    let cumulative = 0;
    let lastPossible = -1;
    for (let i = 0; i < n; i++) {
      const weight = weights[i];
      if (!(weight > 0)) continue;
      cumulative += weight;
      lastPossible = i;
      // Strict ">" so a zero-probability token can never be picked, even for u = 0.
      if (cumulative > target) return i;
    }
    // Rounding left target at (or a hair above) the summed weights: take the last candidate.
    return lastPossible;
  }
}
