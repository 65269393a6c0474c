/**
 * Validated requests → the engine's SamplingParams. Defaults resolve in the order
 * request → generation_config → server config → constants, and the cross-field rules that
 * depend on resolved values (greedy vs n/best_of, beam search, context length) are
 * checked here, throwing ProtocolError('invalid_request').
 */
import { GREEDY_TEMPERATURE_EPSILON, MAX_LOGPROBS, defaultSamplingParams, isGreedy, type SamplingParams } from '../sampling/params.js';
import { invalidRequest } from '../common/protocol-error.js';
import type { MindieGenerateRequest } from './mindie.js';
import { OPENAI_DEFAULT_MAX_TOKENS, guidedDecodingFields, type OpenAISamplingFields } from './openai-common.js';
import type { CompletionRequest } from './openai-completions.js';
import { requestedChatMaxTokens, type ChatCompletionRequest } from './openai-chat.js';

export interface SamplingContext {
  /** From the engine: generation_config.json defaults (temperature, top_k, top_p, repetition_penalty ...). */
  generationDefaults: Partial<SamplingParams>;
  /** Server limits from config. */
  maxIterTimes: number; // MindIE: max_tokens default and upper clamp
  maxModelLen: number; // model context length
  /**
   * Not consulted: the engine ends a sequence on EOS itself (SamplingParams.stopTokenIds
   * holds only the request's extra ids). Kept so callers describe the model completely.
   */
  eosTokenIds: readonly number[];
  vocabSize: number;
  /** Server config maxSeqLen; when given, it lowers the context length below maxModelLen. */
  maxSeqLen?: number;
}

const CONSTANTS = defaultSamplingParams();

interface SamplingKnobs {
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  repetition_penalty?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
}

type ResolvedKnobs = Pick<
  SamplingParams,
  'temperature' | 'topP' | 'topK' | 'minP' | 'repetitionPenalty' | 'presencePenalty' | 'frequencyPenalty'
>;

function resolveKnobs(req: SamplingKnobs, defaults: Partial<SamplingParams>): ResolvedKnobs {
  return {
    temperature: req.temperature ?? defaults.temperature ?? CONSTANTS.temperature,
    topP: req.top_p ?? defaults.topP ?? CONSTANTS.topP,
    topK: req.top_k ?? defaults.topK ?? CONSTANTS.topK,
    minP: req.min_p ?? defaults.minP ?? CONSTANTS.minP,
    repetitionPenalty: req.repetition_penalty ?? defaults.repetitionPenalty ?? CONSTANTS.repetitionPenalty,
    presencePenalty: req.presence_penalty ?? defaults.presencePenalty ?? CONSTANTS.presencePenalty,
    frequencyPenalty: req.frequency_penalty ?? defaults.frequencyPenalty ?? CONSTANTS.frequencyPenalty,
  };
}

/** top_k keeping the whole vocabulary (or more) is the same as no top-k: -1. */
function normalizeTopK(topK: number, vocabSize: number): number {
  return topK <= 0 || (vocabSize > 0 && topK >= vocabSize) ? -1 : topK;
}

/** vLLM: zero temperature means greedy; top-k/top-p/min-p are then reset (penalties still apply). */
function finishKnobs(knobs: ResolvedKnobs, vocabSize: number): ResolvedKnobs {
  if (isGreedy(knobs)) return { ...knobs, topK: -1, topP: 1, minP: 0 };
  return { ...knobs, topK: normalizeTopK(knobs.topK, vocabSize) };
}

function contextLength(ctx: SamplingContext): number {
  return Math.min(ctx.maxModelLen, ctx.maxSeqLen ?? Number.POSITIVE_INFINITY);
}

export function mindieToSamplingParams(
  req: MindieGenerateRequest,
  ctx: SamplingContext,
  promptTokenCount: number,
): SamplingParams {
  const knobs = resolveKnobs(req, ctx.generationDefaults);

  const n = req.n ?? 1;
  const bestOf = req.best_of ?? n;
  if (Math.max(n, bestOf) > 1 && isGreedy(knobs)) {
    const which = n > 1 ? `n is ${n}` : `best_of is ${bestOf}`;
    throw invalidRequest(
      `temperature must be greater than 0 when n or best_of is greater than 1 (${which}), got temperature=${knobs.temperature}`,
      'temperature',
    );
  }
  if (req.stream) checkStreamableBestOf(n, bestOf);

  // The spec caps output at min(max_tokens, maxIterTimes); the context that is left caps
  // it further instead of failing the request.
  const limit = contextLength(ctx);
  const room = limit - promptTokenCount;
  if (room < 1) {
    throw invalidRequest(
      `The prompt has ${promptTokenCount} tokens, which leaves no room to generate within the maximum sequence length of ${limit} tokens.`,
      'prompt',
    );
  }
  const maxTokens = Math.min(req.max_tokens ?? ctx.maxIterTimes, ctx.maxIterTimes, room);

  return {
    ...finishKnobs(knobs, ctx.vocabSize),
    maxTokens,
    minTokens: ctx.generationDefaults.minTokens ?? CONSTANTS.minTokens,
    seed: req.seed,
    stop: req.stop,
    stopTokenIds: req.stop_token_ids,
    includeStopStrInOutput: req.include_stop_str_in_output,
    ignoreEos: req.ignore_eos,
    skipSpecialTokens: req.skip_special_tokens,
    n,
    bestOf,
  };
}

/**
 * With best_of > n the n sequences returned are the best by cumulative logprob, known
 * only once all best_of have finished, so there is nothing to stream. (vLLM 0.6's
 * OpenAI server silently answers such a request without streaming; a streaming client
 * cannot parse that, so it is refused instead.)
 */
function checkStreamableBestOf(n: number, bestOf: number): void {
  if (bestOf !== n) {
    throw invalidRequest(
      `best_of must equal n when streaming: the best ${n} of ${bestOf} sequences are only known once all have finished (got n=${n}, best_of=${bestOf}). Set stream to false, or best_of to n.`,
      'best_of',
    );
  }
}

/** Which logprobs an OpenAI request asks for, and under which parameter names. */
interface RequestedLogprobs {
  /** Alternatives per generated token (the engine's SamplingParams.logprobs). */
  logprobs?: number;
  logprobsParam: string;
  promptLogprobs?: number;
}

/** vLLM's engine limit (max_logprobs, 20 by default) on both kinds. */
function checkLogprobLimits(requested: RequestedLogprobs, promptLogprobsParam: string): void {
  const over = (count: number | undefined) => count !== undefined && count > MAX_LOGPROBS;
  if (over(requested.logprobs)) {
    throw invalidRequest(`Cannot request more than ${MAX_LOGPROBS} logprobs.`, requested.logprobsParam);
  }
  if (over(requested.promptLogprobs)) {
    throw invalidRequest(`Cannot request more than ${MAX_LOGPROBS} logprobs.`, promptLogprobsParam);
  }
}

export function completionToSamplingParams(
  req: CompletionRequest,
  ctx: SamplingContext,
  promptTokenCount: number,
): SamplingParams {
  // vLLM: echo with logprobs reports the prompt's logprobs too, as many alternatives per token.
  const promptLogprobs = req.prompt_logprobs ?? (req.echo ? req.logprobs : undefined);
  const requested = { logprobs: req.logprobs, logprobsParam: 'logprobs', promptLogprobs };
  return openAIToSamplingParams(req, req.max_tokens, ctx, promptTokenCount, 'prompt', requested, 'spec');
}

export function chatToSamplingParams(
  req: ChatCompletionRequest,
  ctx: SamplingContext,
  promptTokenCount: number,
): SamplingParams {
  // vLLM 0.6: top_logprobs defaults to 0, so logprobs alone reports the chosen tokens only.
  const requested = {
    logprobs: req.logprobs ? (req.top_logprobs ?? 0) : undefined,
    logprobsParam: 'top_logprobs',
    promptLogprobs: req.prompt_logprobs,
  };
  return openAIToSamplingParams(req, requestedChatMaxTokens(req), ctx, promptTokenCount, 'messages', requested, 'context');
}

/**
 * What max_tokens means when the request leaves it out: /v1/completions keeps the spec
 * table's (and vLLM's) 16; chat gets the rest of the context as in vLLM and OpenAI,
 * since a chat reply cut at 16 tokens breaks every client (a structured object cannot
 * even close). generation_config's max_new_tokens, when the model has one, wins in both.
 */
type MaxTokensDefault = 'spec' | 'context';

/**
 * @param requestedMaxTokens undefined: not given (see MaxTokensDefault); null: as many
 *   as the context allows (vLLM).
 */
function openAIToSamplingParams(
  req: OpenAISamplingFields,
  requestedMaxTokens: number | null | undefined,
  ctx: SamplingContext,
  promptTokenCount: number,
  promptParam: 'prompt' | 'messages',
  requested: RequestedLogprobs,
  maxTokensDefault: MaxTokensDefault,
): SamplingParams {
  const knobs = resolveKnobs(req, ctx.generationDefaults);
  checkSequenceRules(req, knobs);
  checkLogprobLimits(requested, 'prompt_logprobs');

  const limit = contextLength(ctx);
  let maxTokens: number;
  const restOfContext =
    requestedMaxTokens === null ||
    (requestedMaxTokens === undefined && maxTokensDefault === 'context' && ctx.generationDefaults.maxTokens === undefined);
  if (restOfContext) {
    maxTokens = limit - promptTokenCount;
    if (maxTokens < 1) {
      throw invalidRequest(
        `This model's maximum context length is ${limit} tokens. However, you requested ${promptTokenCount} tokens in the messages, Please reduce the length of the messages.`,
        promptParam,
      );
    }
  } else {
    maxTokens = requestedMaxTokens ?? ctx.generationDefaults.maxTokens ?? OPENAI_DEFAULT_MAX_TOKENS;
    if (promptTokenCount + maxTokens > limit) {
      throw invalidRequest(
        `This model's maximum context length is ${limit} tokens. However, you requested ${promptTokenCount + maxTokens} tokens (${promptTokenCount} in the messages, ${maxTokens} in the completion). Please reduce the length of the messages or completion.`,
        requestedMaxTokens === undefined ? promptParam : 'max_tokens',
      );
    }
  }
  if (req.min_tokens > maxTokens) {
    throw invalidRequest(
      `min_tokens must be less than or equal to max_tokens=${maxTokens}, got ${req.min_tokens}.`,
      'min_tokens',
    );
  }

  const logitBias = checkedLogitBias(req.logit_bias, ctx.vocabSize);

  return {
    ...finishKnobs(knobs, ctx.vocabSize),
    ...(logitBias ? { logitBias } : {}),
    maxTokens,
    minTokens: req.min_tokens,
    seed: openAISeed(req.seed),
    stop: req.stop,
    stopTokenIds: req.stop_token_ids,
    includeStopStrInOutput: req.include_stop_str_in_output,
    ignoreEos: req.ignore_eos,
    skipSpecialTokens: req.skip_special_tokens,
    n: req.n,
    bestOf: req.best_of ?? req.n,
    ...(req.use_beam_search
      ? { useBeamSearch: true, lengthPenalty: req.length_penalty, earlyStopping: req.early_stopping }
      : {}),
    logprobs: requested.logprobs,
    promptLogprobs: requested.promptLogprobs,
  };
}

/**
 * n / best_of / beam-search rules of the spec table and vLLM's SamplingParams, on the
 * resolved values (a generation_config temperature counts as if the client sent it).
 */
function checkSequenceRules(req: OpenAISamplingFields, knobs: ResolvedKnobs): void {
  const n = req.n;
  const bestOf = req.best_of ?? n;
  if (req.use_beam_search) {
    if (n <= 1) throw invalidRequest(`use_beam_search requires n > 1, got n=${n}.`, 'n');
    if (!isGreedy(knobs)) {
      throw invalidRequest(`temperature must be 0 when using beam search, got ${knobs.temperature}.`, 'temperature');
    }
    if (knobs.topP < 1 - GREEDY_TEMPERATURE_EPSILON) {
      throw invalidRequest(`top_p must be 1 when using beam search, got ${knobs.topP}.`, 'top_p');
    }
    if (knobs.topK !== -1) throw invalidRequest(`top_k must be -1 when using beam search, got ${knobs.topK}.`, 'top_k');
    const guided = guidedDecodingFields(req);
    if (guided.length > 0) {
      // Beams fork mid-output, and a grammar's state cannot be copied.
      throw invalidRequest(`Structured output (${guided[0]}) cannot be combined with beam search.`, 'use_beam_search');
    }
    if (req.stream) {
      // vLLM 0.6's OpenAI server silently does not stream beam search; refused here instead.
      throw invalidRequest(
        'Beam search cannot stream: the best beams are only known once the search ends. Set stream to false.',
        'use_beam_search',
      );
    }
    return;
  }
  if (Math.abs(req.length_penalty - 1) > GREEDY_TEMPERATURE_EPSILON) {
    throw invalidRequest(
      `length_penalty only applies to beam search: it needs use_beam_search=true, best_of > 1 and top_k=-1, and must be 1.0 otherwise, got ${req.length_penalty}.`,
      'length_penalty',
    );
  }
  if (req.early_stopping !== false) {
    throw invalidRequest('early_stopping is not effective and must be False when not using beam search.', 'early_stopping');
  }
  if (Math.max(n, bestOf) > 1) {
    const which = n > 1 ? `n=${n}` : `best_of=${bestOf}`;
    if (isGreedy(knobs)) {
      throw invalidRequest(
        `${which} needs random sampling: temperature must be greater than 0, got ${knobs.temperature}.`,
        'temperature',
      );
    }
    if (knobs.topK === 1) {
      throw invalidRequest(`${which} needs random sampling: top_k must not be 1.`, 'top_k');
    }
  }
  if (req.stream) checkStreamableBestOf(n, bestOf);
}

/** vLLM refuses logit_bias ids outside the vocabulary instead of ignoring them. */
export function checkedLogitBias(bias: ReadonlyMap<number, number> | undefined, vocabSize: number): ReadonlyMap<number, number> | undefined {
  if (bias === undefined || bias.size === 0) return undefined;
  const unknown = [...bias.keys()].filter((id) => id < 0 || id >= vocabSize);
  if (unknown.length > 0) {
    throw invalidRequest(
      `token_id(s) [${unknown.join(', ')}] in logit_bias contain out-of-vocab token ids. Vocabulary size: ${vocabSize}`,
      'logit_bias',
    );
  }
  return bias;
}

/** vLLM: seed -1 means "random"; other negative int64 seeds map to the same uint64 bits. */
function openAISeed(seed: bigint | undefined): bigint | undefined {
  if (seed === undefined || seed === -1n) return undefined;
  return BigInt.asUintN(64, seed);
}
