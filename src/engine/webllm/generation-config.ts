/**
 * What @mlc-ai/web-llm (0.2.79) can be asked per request, from our resolved
 * SamplingParams: its GenerationConfig (sampling, presence / frequency penalties,
 * logit_bias, logprobs, response_format with a JSON schema or an EBNF grammar) and, for
 * everything it cannot do as vLLM does, the request field to name in a 400. Stop strings, stop token ids, EOS and max_tokens are not
 * web-llm's to apply: WebLlmEngine reads every sampled token id and runs them through the
 * same output processing as the onnxruntime engine (engine/sequence.ts).
 */
import type { GuidedDecodingRequest } from '../../guided/request.js';
import { isGreedy, type SamplingParams } from '../../sampling/params.js';

/** The part of web-llm's GenerationConfig this engine sets (web-llm's own field names). */
export interface WebLlmGenerationConfig {
  temperature: number;
  top_p: number;
  presence_penalty: number;
  frequency_penalty: number;
  logit_bias?: Record<string, number>;
  response_format?: { type: 'json_object'; schema?: string } | { type: 'grammar'; grammar: string };
  /**
   * Makes web-llm turn its logits into probabilities in place (softmax at `temperature`)
   * and sample from those: WebLlmEngine reads the distribution back for the logprobs.
   */
  logprobs?: true;
  /** 0: web-llm's own top list (token strings, no ids) is not read. */
  top_logprobs?: 0;
  /** Always true: EOS is judged by our output processing, which needs to see the token. */
  ignore_eos: true;
  /** A backstop: our output processing ends the sequence first. */
  max_tokens: number;
  stop: string[];
}

/**
 * What becomes of each sampling parameter in the page's web-llm engine. Typed over every key
 * of SamplingParams: a parameter added there and not placed here fails to compile, rather
 * than being ignored by this engine without a word. `config` names web-llm's field
 * (webLlmGenerationConfig); `refused` is refused when set (webLlmRefusals); `edge` is applied
 * by our own output processing around web-llm (engine/sequence.ts).
 */
export const WEBLLM_PARAMETER_HANDLING: { readonly [K in keyof Required<SamplingParams>]: { config: string } | { refused: string } | { edge: string } } = {
  maxTokens: { edge: 'output processing ends the sequence (max_tokens is a backstop)' },
  minTokens: { refused: 'web-llm cannot ban EOS for the first tokens' },
  temperature: { config: 'temperature' },
  topK: { refused: 'no top_k in web-llm' },
  topP: { config: 'top_p' },
  minP: { refused: 'no min_p in web-llm' },
  repetitionPenalty: { refused: 'web-llm applies it differently from vLLM' },
  presencePenalty: { config: 'presence_penalty' },
  frequencyPenalty: { config: 'frequency_penalty' },
  logitBias: { config: 'logit_bias' },
  seed: { config: 'seed (webLlmSeed)' },
  stop: { edge: 'stop strings' },
  stopTokenIds: { edge: 'stop token ids' },
  includeStopStrInOutput: { edge: 'stop strings' },
  ignoreEos: { edge: 'EOS is judged by output processing' },
  skipSpecialTokens: { edge: 'detokenizing' },
  guide: { config: 'response_format (guided_regex refused)' },
  n: { edge: 'the n sequences run one after another' },
  bestOf: { refused: 'best_of > n' },
  useBeamSearch: { refused: 'no beam search in web-llm' },
  lengthPenalty: { refused: 'no beam search in web-llm' },
  earlyStopping: { edge: 'read only with beam search, which is refused' },
  logprobs: { config: 'logprobs (top_p < 1 refused)' },
  promptLogprobs: { refused: 'web-llm keeps no prefill logits' },
};

/** A request field web-llm cannot honour, as the serving layer's 400 names it. */
export interface WebLlmRefusal {
  param: string;
  message: string;
}

const WHY = 'web-llm (the in-page engine serving this model) has no such option';

/** The fields of `params` web-llm cannot honour; empty when it can run the request as asked. */
export function webLlmRefusals(params: SamplingParams): WebLlmRefusal[] {
  const out: WebLlmRefusal[] = [];
  const refuse = (param: string, what: string) => out.push({ param, message: `${what}: ${WHY}.` });
  const sampling = !isGreedy(params);
  // vLLM ignores top_k / min_p under greedy decoding; so do we.
  if (sampling && params.topK > 0) refuse('top_k', `top_k=${params.topK} is not supported`);
  if (sampling && params.minP > 0) refuse('min_p', `min_p=${params.minP} is not supported`);
  // web-llm 0.2.79 applies a repetition penalty only where no presence / frequency penalty
  // is configured (every mlc-chat-config.json sets both), and then over the generated
  // tokens only, where vLLM's covers the prompt too.
  if (params.repetitionPenalty !== 1) refuse('repetition_penalty', `repetition_penalty=${params.repetitionPenalty} is not supported`);
  if (params.minTokens > 0) refuse('min_tokens', `min_tokens=${params.minTokens} is not supported (web-llm cannot ban EOS for the first tokens)`);
  if (params.lengthPenalty !== undefined && params.lengthPenalty !== 1) refuse('length_penalty', 'length_penalty is not supported');
  if ((params.bestOf ?? 1) > (params.n ?? 1)) {
    refuse('best_of', `best_of=${params.bestOf} > n is not supported (web-llm runs the n sequences one after another; ranking extra ones is not implemented)`);
  }
  if (params.promptLogprobs !== undefined) refuse('prompt_logprobs', 'prompt_logprobs is not supported (web-llm keeps no prefill logits)');
  // web-llm's logprobs are of softmax(logits / temperature) before top_p, vLLM's after it.
  if (params.logprobs !== undefined && sampling && params.topP < 1) {
    refuse('logprobs', `logprobs with top_p=${params.topP} < 1 are not supported (web-llm reports the distribution before top_p, vLLM after it)`);
  }
  const guide = params.guide?.request;
  if (guide?.kind === 'regex') refuse(guide.param ?? 'guided_regex', 'guided_regex is not supported (web-llm takes JSON schemas and EBNF grammars)');
  return out;
}

/** An EBNF string literal (xgrammar's syntax, as GBNF's). */
function ebnfLiteral(text: string): string {
  return JSON.stringify(text);
}

/** The constraint as web-llm's response_format (guided_regex is refused before). */
export function webLlmResponseFormat(request: GuidedDecodingRequest): WebLlmGenerationConfig['response_format'] {
  switch (request.kind) {
    case 'json':
      return { type: 'json_object', schema: typeof request.schema === 'string' ? request.schema : JSON.stringify(request.schema) };
    case 'json_object':
      return { type: 'json_object' };
    case 'choice':
      return { type: 'grammar', grammar: `root ::= ${request.choices.map(ebnfLiteral).join(' | ')}` };
    case 'regex':
      throw new Error('guided_regex cannot be sent to web-llm');
  }
}

/**
 * A top_p so small that web-llm's top-p draw from probabilities keeps the most likely
 * token only (TVM's sample_top_p_from_prob: the first token in descending order whose
 * probability exceeds top_p × a uniform draw): argmax.
 */
export const ARGMAX_TOP_P = 1e-9;

/**
 * web-llm's config for a request it can run (webLlmRefusals found nothing). Greedy is
 * temperature 0, which web-llm decodes by argmax as we do. Greedy with logprobs cannot be:
 * web-llm's logprobs at temperature 0 are of softmax(logits / 1e-6), one-hot, where
 * vLLM's are of softmax(logits). So it runs at temperature 1 (the distribution vLLM
 * reports) with ARGMAX_TOP_P, which draws the argmax from it.
 */
export function webLlmGenerationConfig(params: SamplingParams): WebLlmGenerationConfig {
  const greedy = isGreedy(params);
  const logprobs = params.logprobs !== undefined;
  const config: WebLlmGenerationConfig = {
    temperature: greedy ? (logprobs ? 1 : 0) : params.temperature,
    top_p: greedy && logprobs ? ARGMAX_TOP_P : params.topP,
    presence_penalty: params.presencePenalty,
    frequency_penalty: params.frequencyPenalty,
    ignore_eos: true,
    max_tokens: params.maxTokens,
    stop: [],
  };
  if (params.logitBias !== undefined && params.logitBias.size > 0) {
    config.logit_bias = Object.fromEntries([...params.logitBias].map(([token, bias]) => [String(token), bias]));
  }
  if (logprobs) {
    config.logprobs = true;
    config.top_logprobs = 0;
  }
  if (params.guide !== undefined) config.response_format = webLlmResponseFormat(params.guide.request);
  return config;
}

/**
 * web-llm seeds its sampler with a JavaScript number; our seeds are uint64. The low 32
 * bits keep every seed a request can send distinct in practice and exact as a number.
 */
export function webLlmSeed(seed: bigint): number {
  return Number(BigInt.asUintN(32, seed));
}
