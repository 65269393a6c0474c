import { sharedStopIdSet } from '../sampling/shared-id-sets.js';
import type { Guide } from '../guided/guide.js';
import type { SamplingParams } from '../sampling/params.js';
import { Sampler, tokenLogprobNeeded, type SampledToken } from '../sampling/sampler.js';
import type { Rng } from '../sampling/rng.js';
import { IncrementalDetokenizer } from '../tokenizer/detokenizer.js';
import type { Tokenizer } from '../tokenizer/types.js';
import type { BatchRow } from './batch-row.js';
import { proposeNgramDraft } from './ngram-proposer.js';
import { StopStringChecker } from './stop-checker.js';
import type { FinishReason, GenerationDelta } from './types.js';
import type { TokenLogprob } from '../sampling/logprobs.js';

/** The longest pause (in steps) between drafts of a sequence whose guesses keep failing. */
const MAX_DRAFT_PAUSE = 32;

export interface SequenceLimits {
  vocabSize: number;
  /** Model context: prompt + output never exceed it. */
  maxModelLen: number;
  eosTokenIds: readonly number[];
}

/** Where a sequence's output goes: its request's group. */
export interface SequenceSink {
  emit(delta: GenerationDelta): void;
  /** The sequence cannot go on (its grammar refused a token): the request fails. */
  fail(error: unknown): void;
}

export interface SequenceOptions {
  sink: SequenceSink;
  /** Defaults to createRng(params.seed), made when the sampler first draws; each of a request's n sequences gets its own. */
  rng?: Rng;
}

/**
 * One sequence being generated: its tokens, its sampler, and the output processing of
 * vLLM's stop checker (EOS, stop token ids, stop strings, max tokens, context length)
 * and detokenizer. The step loop owns the model side (its KV row); this owns the rest.
 */
export class Sequence implements BatchRow {
  readonly outputTokenIds: number[] = [];
  finishReason: FinishReason | null = null;
  /** Slots of this sequence in the model's KV cache (prompt + fed output tokens). */
  cachedLength = 0;
  /** Sum of the logprobs of the tokens appended so far. */
  cumulativeLogprob = 0;

  /** Steps to skip guessing for (speculative decoding), and failed drafts in a row. */
  private draftPause = 0;
  private draftFailures = 0;

  private readonly sampler: Sampler;
  /** Structured output state, when the request asked for it. */
  private readonly guide: Guide | null;
  private readonly detokenizer: IncrementalDetokenizer;
  private readonly stopChecker: StopStringChecker;
  private readonly stopTokenIds: ReadonlySet<number>;
  private readonly eosTokenIds: ReadonlySet<number>;
  private readonly sink: SequenceSink;

  constructor(
    readonly index: number,
    readonly promptTokenIds: readonly number[],
    readonly params: SamplingParams,
    tokenizer: Tokenizer,
    private readonly limits: SequenceLimits,
    options: SequenceOptions,
  ) {
    this.sink = options.sink;
    this.guide = params.guide?.createGuide() ?? null;
    this.sampler = new Sampler(params, {
      vocabSize: limits.vocabSize,
      eosTokenIds: limits.eosTokenIds,
      rng: options.rng,
      guide: this.guide ?? undefined,
      tokenLogprob: tokenLogprobNeeded(params),
    });
    this.detokenizer = new IncrementalDetokenizer(tokenizer, {
      skipSpecialTokens: params.skipSpecialTokens,
      promptTokenIds,
    });
    this.stopChecker = new StopStringChecker(params.stop, params.includeStopStrInOutput);
    this.stopTokenIds = sharedStopIdSet(params.stopTokenIds);
    this.eosTokenIds = new Set(params.ignoreEos ? [] : limits.eosTokenIds);
  }

  get finished(): boolean {
    return this.finishReason !== null;
  }

  sequenceTokenIds(): readonly number[] {
    return [...this.promptTokenIds, ...this.outputTokenIds];
  }

  /** The token the next decode step feeds for this sequence. */
  get lastTokenId(): number {
    return this.outputTokenIds[this.outputTokenIds.length - 1];
  }

  /**
   * Guesses for a speculative step (prompt lookup), never reaching past the tokens the
   * sequence may still generate: a guess is fed at the position after the one before it,
   * and every position must stay inside max_tokens and the model's context.
   */
  draftTokens(maxTokens: number, onlyIfGuided = false): number[] {
    if (onlyIfGuided && this.guide === null) return [];
    if (this.draftPause > 0) {
      this.draftPause -= 1;
      return [];
    }
    const generated = this.outputTokenIds.length;
    // The step samples one token from the last token's logits whatever happens: guesses
    // can only add to that one.
    const room = Math.min(
      this.params.maxTokens - generated - 1,
      this.limits.maxModelLen - this.promptTokenIds.length - generated - 1,
    );
    if (room <= 0) return [];
    return proposeNgramDraft(this.promptTokenIds, this.outputTokenIds, Math.min(maxTokens, room));
  }

  /**
   * How many guesses of the last draft proved right. Guessing costs a little model time,
   * so a sequence whose guesses keep failing (text that does not repeat, or a high
   * temperature) stops guessing for a while, twice as long after each failure in a row.
   */
  draftOutcome(accepted: number): void {
    if (accepted > 0) {
      this.draftFailures = 0;
      return;
    }
    this.draftFailures += 1;
    this.draftPause = Math.min(2 ** this.draftFailures, MAX_DRAFT_PAUSE);
  }

  guidePending(): Promise<void> | null {
    return this.guide?.pending?.() ?? null;
  }

  guideBusy(): boolean {
    return this.guide?.busy?.() ?? false;
  }

  /** Samples the next token from this sequence's logits row (which it may overwrite). */
  sample(logits: Float32Array): SampledToken {
    return this.sampler.sample(logits, this);
  }

  /** Samples the next token from `logits` and appends it. */
  step(logits: Float32Array): GenerationDelta {
    const { tokenId, logprob, topLogprobs } = this.sample(logits);
    return this.append(tokenId, logprob, topLogprobs);
  }

  /**
   * Records a token, decides whether the sequence ends, and publishes the delta.
   * `topLogprobs`: the alternatives to report with it (params.logprobs).
   */
  append(tokenId: number, logprob: number, topLogprobs?: TokenLogprob[]): GenerationDelta {
    this.outputTokenIds.push(tokenId);
    this.cumulativeLogprob += logprob;
    this.sampler.accept(tokenId);
    try {
      this.guide?.accept(tokenId);
    } catch (error) {
      this.fail(error);
      return { index: this.index, tokenIds: [tokenId], logprobs: [logprob], text: '', finishReason: 'abort', stopReason: null };
    }
    // The grammar is complete (it accepted a stop token): the sequence ends as on EOS.
    const grammarDone = this.guide?.isTerminated() ?? false;
    const outputLength = this.outputTokenIds.length;
    const mayStop = outputLength >= this.params.minTokens || grammarDone;
    const isEos = this.eosTokenIds.has(tokenId) || grammarDone;
    const isStopToken = this.stopTokenIds.has(tokenId);

    let text = '';
    let stopReason: string | number | null = null;
    let finishReason: FinishReason | null = null;
    if (mayStop && (isEos || isStopToken)) {
      // As vLLM: the stopping token's own text is dropped unless asked for.
      if (this.params.includeStopStrInOutput) text += this.detokenizer.push(tokenId);
      finishReason = 'stop';
      stopReason = isEos ? null : tokenId;
      text += this.drain();
    } else {
      const piece = this.detokenizer.push(tokenId);
      const checked = mayStop ? this.stopChecker.push(piece) : { emit: piece, matched: null };
      text = checked.emit;
      if (checked.matched !== null) {
        finishReason = 'stop';
        stopReason = checked.matched;
      } else if (
        outputLength >= this.params.maxTokens ||
        this.promptTokenIds.length + outputLength >= this.limits.maxModelLen
      ) {
        finishReason = 'length';
        text += this.drain();
      }
    }
    // drain() can itself complete a stop string with the detokenizer's held-back bytes.
    if (this.pendingStop !== null) {
      finishReason = 'stop';
      stopReason = this.pendingStop;
    }
    const delta: GenerationDelta = {
      index: this.index,
      tokenIds: [tokenId],
      logprobs: [logprob],
      text,
      finishReason,
      stopReason,
      cumulativeLogprob: this.cumulativeLogprob,
    };
    if (topLogprobs !== undefined) delta.topLogprobs = [topLogprobs];
    return this.publish(delta);
  }

  /** Ends the sequence because its client went away. */
  abort(): GenerationDelta {
    return this.publish({
      index: this.index,
      tokenIds: [],
      logprobs: [],
      text: '',
      finishReason: 'abort',
      stopReason: null,
      cumulativeLogprob: this.cumulativeLogprob,
    });
  }

  /** Ends the sequence because the model (or its grammar) failed; the request fails with `error`. */
  fail(error: unknown): void {
    if (this.finished) return;
    this.finishReason = 'abort';
    this.guide?.dispose();
    this.sink.fail(error);
  }

  /** Ends the sequence without telling anyone: its request already failed or was dropped. */
  discard(): void {
    if (this.finished) return;
    this.finishReason = 'abort';
    this.guide?.dispose();
  }

  private pendingStop: string | null = null;

  /** Releases all held-back text at the end of generation. */
  private drain(): string {
    const rest = this.stopChecker.push(this.detokenizer.flush());
    if (rest.matched !== null) {
      this.pendingStop = rest.matched;
      return rest.emit;
    }
    return rest.emit + this.stopChecker.flush();
  }

  private publish(delta: GenerationDelta): GenerationDelta {
    if (delta.finishReason !== null) {
      this.finishReason = delta.finishReason;
      this.guide?.dispose();
    }
    this.sink.emit(delta);
    return delta;
  }
}
