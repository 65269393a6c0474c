import type { GuideFactory } from '../guided/guide.js';

/**
 * Normalized sampling parameters: what the engine runs on, after every API's request has
 * been validated and its defaults resolved (request → generation_config → server config →
 * constants). Semantics follow vLLM's SamplingParams.
 */
export interface SamplingParams {
  /** Upper bound on generated tokens (already clamped by the server's limits). */
  maxTokens: number;
  /** EOS and stop token ids are banned until this many tokens were generated. */
  minTokens: number;
  /** 0 means greedy; then topK/topP/minP are ignored (penalties still apply, as in vLLM). */
  temperature: number;
  /** -1 (or 0) disables top-k. */
  topK: number;
  /** In (0, 1]; 1 disables nucleus filtering. */
  topP: number;
  /** In [0, 1]; 0 disables. */
  minP: number;
  /** 1 disables; >1 divides positive / multiplies negative logits of seen tokens (prompt + output). */
  repetitionPenalty: number;
  /** Subtracted once from every token that occurs in the output so far. */
  presencePenalty: number;
  /** Subtracted per occurrence of a token in the output so far. */
  frequencyPenalty: number;
  /** OpenAI's logit_bias: token id → amount added to its raw score before every other processor. */
  logitBias?: ReadonlyMap<number, number>;
  /** uint64 seed; undefined draws a fresh random seed per request. */
  seed?: bigint;
  /** Stop strings: generation ends when the output text contains one. */
  stop: string[];
  /** Token ids that end generation (in addition to EOS unless ignoreEos). */
  stopTokenIds: number[];
  /** Keep the matched stop string in the returned text. */
  includeStopStrInOutput: boolean;
  /** Keep generating past EOS. */
  ignoreEos: boolean;
  /** Drop special tokens (BOS/EOS/...) from the returned text. */
  skipSpecialTokens: boolean;
  /**
   * Structured output (guided_json / guided_regex / guided_choice / response_format): a
   * grammar from src/guided's compileGuide. Each sequence creates its own guide from it;
   * tokens the grammar cannot continue with are masked before every other processor, and
   * the sequence ends with "stop" once the grammar is complete.
   */
  guide?: GuideFactory;
  /**
   * Sequences returned per request (vLLM's n); 1 when absent. With random sampling they
   * are drawn independently from the same prompt; with beam search they are the n best beams.
   */
  n?: number;
  /**
   * Sequences generated per request (vLLM's best_of, at least n; defaults to n). Without
   * beam search, the n with the highest cumulative logprob are returned; with beam search
   * it is the beam width.
   */
  bestOf?: number;
  /** Beam search instead of sampling (vLLM 0.6's use_beam_search; temperature must be 0). */
  useBeamSearch?: boolean;
  /** Beam score = cumulative logprob / length^lengthPenalty (vLLM/HF); 1 when absent. */
  lengthPenalty?: number;
  /**
   * When beam search stops (HF / vLLM semantics): true as soon as there are best_of finished
   * beams; false when no live beam can beat the worst of them at its current length;
   * 'never' when none could at the longest possible length. false when absent.
   */
  earlyStopping?: boolean | 'never';
  /**
   * Top alternatives reported per generated token (0..20), best first, beside the chosen
   * token's own logprob; undefined reports nothing beyond `GenerationDelta.logprobs`.
   */
  logprobs?: number;
  /**
   * Which distribution the reported logprobs (the chosen token's and the alternatives)
   * come from, as vLLM's --logprobs-mode; DEFAULT_LOGPROBS_MODE when absent. Sampling
   * itself is the same in every mode.
   */
  logprobsMode?: LogprobsMode;
  /**
   * Logprobs of the prompt tokens (each with this many top alternatives), on the first
   * delta of every sequence; undefined: none.
   */
  promptLogprobs?: number;
}

/**
 * vLLM's --logprobs-mode values. "raw": the model's own scores (after the structured-output
 * mask, which vLLM applies before its sampler), before logit_bias, min_tokens, penalties,
 * temperature and the top-k / top-p / min-p filters; "processed": the scores the token was
 * drawn from (for greedy decoding: after the penalties). "logprobs" normalises them with a
 * log-softmax, "logits" reports the scores themselves.
 */
export const LOGPROBS_MODES = ['raw_logprobs', 'raw_logits', 'processed_logprobs', 'processed_logits'] as const;
export type LogprobsMode = (typeof LOGPROBS_MODES)[number];
/** vLLM's default since its V1 engine (V0, vLLM 0.6, reported processed logprobs). */
export const DEFAULT_LOGPROBS_MODE: LogprobsMode = 'raw_logprobs';

/** vLLM's default max_logprobs: the most alternatives a request may ask for per token. */
export const MAX_LOGPROBS = 20;

/** vLLM's threshold below which a temperature means greedy decoding. */
export const GREEDY_TEMPERATURE_EPSILON = 1e-5;

export function defaultSamplingParams(overrides: Partial<SamplingParams> = {}): SamplingParams {
  return {
    maxTokens: 16,
    minTokens: 0,
    temperature: 1,
    topK: -1,
    topP: 1,
    minP: 0,
    repetitionPenalty: 1,
    presencePenalty: 0,
    frequencyPenalty: 0,
    seed: undefined,
    stop: [],
    stopTokenIds: [],
    includeStopStrInOutput: false,
    ignoreEos: false,
    skipSpecialTokens: true,
    ...overrides,
  };
}

export function isGreedy(params: Pick<SamplingParams, 'temperature'>): boolean {
  return params.temperature < GREEDY_TEMPERATURE_EPSILON;
}
