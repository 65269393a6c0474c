/**
 * What @mlc-ai/web-llm (0.2.79) can be asked per request, from our resolved
 * SamplingParams: its GenerationConfig (sampling, penalties, logit_bias, response_format
 * with a JSON schema or an EBNF grammar) and, for everything it cannot do, the request
 * field to name in a 400. Stop strings, stop token ids, EOS and max_tokens are not
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
  repetition_penalty: number;
  logit_bias?: Record<string, number>;
  response_format?: { type: 'json_object'; schema?: string } | { type: 'grammar'; grammar: string };
  /** Always true: EOS is judged by our output processing, which needs to see the token. */
  ignore_eos: true;
  /** A backstop: our output processing ends the sequence first. */
  max_tokens: number;
  stop: string[];
}

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
  if (params.minTokens > 0) refuse('min_tokens', `min_tokens=${params.minTokens} is not supported (web-llm cannot ban EOS for the first tokens)`);
  if (params.lengthPenalty !== undefined && params.lengthPenalty !== 1) refuse('length_penalty', 'length_penalty is not supported');
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
 * web-llm's config for a request it can run (webLlmRefusals found nothing). Greedy is
 * temperature 0, which web-llm decodes by argmax as we do.
 */
export function webLlmGenerationConfig(params: SamplingParams): WebLlmGenerationConfig {
  const config: WebLlmGenerationConfig = {
    temperature: isGreedy(params) ? 0 : params.temperature,
    top_p: params.topP,
    presence_penalty: params.presencePenalty,
    frequency_penalty: params.frequencyPenalty,
    repetition_penalty: params.repetitionPenalty,
    ignore_eos: true,
    max_tokens: params.maxTokens,
    stop: [],
  };
  if (params.logitBias !== undefined && params.logitBias.size > 0) {
    config.logit_bias = Object.fromEntries([...params.logitBias].map(([token, bias]) => [String(token), bias]));
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
