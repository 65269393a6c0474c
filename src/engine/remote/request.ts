/**
 * The upstream request RemoteEngine sends: OpenAI's `/v1/completions` with the prompt as
 * token ids and every sampling parameter spelled out under vLLM's names, so the upstream
 * applies exactly what the edge resolved and none of its own defaults.
 */
import type { SamplingParams } from '../../sampling/params.js';
import { guidedFields } from './guides.js';

/** How the upstream reports which tokens it generated. */
export type TokenIdSource =
  /**
   * `logprobs: 0` with `return_tokens_as_token_ids`: vLLM names each sampled token
   * "token_id:<id>" and gives its logprob. Exact ids; needs vLLM.
   */
  | 'logprobs'
  /**
   * `stream_options.continuous_usage_stats`: every chunk carries the running
   * completion_tokens count, so counts are exact but ids are unknown. Works with this
   * project's server and any vLLM.
   */
  | 'usage';

export interface CompletionRequestOptions {
  model: string;
  promptTokenIds: readonly number[];
  params: SamplingParams;
  tokenIds: TokenIdSource;
}

/**
 * What becomes of each sampling parameter on its way upstream. Typed over every key of
 * SamplingParams: a parameter added there and not placed here fails to compile, rather than
 * being dropped without a word. `sent` names the vLLM field; `refused` is refused before the
 * request is made (unsupportedByEngine: RemoteEngine declares no multi-sequence or logprob
 * features); `edge` is applied by this side.
 */
export const REMOTE_PARAMETER_HANDLING: { readonly [K in keyof Required<SamplingParams>]: { sent: string } | { refused: string } | { edge: string } } = {
  maxTokens: { sent: 'max_tokens' },
  minTokens: { sent: 'min_tokens' },
  temperature: { sent: 'temperature' },
  topK: { sent: 'top_k' },
  topP: { sent: 'top_p' },
  minP: { sent: 'min_p' },
  repetitionPenalty: { sent: 'repetition_penalty' },
  presencePenalty: { sent: 'presence_penalty' },
  frequencyPenalty: { sent: 'frequency_penalty' },
  logitBias: { sent: 'logit_bias' },
  seed: { sent: 'seed' },
  stop: { sent: 'stop' },
  stopTokenIds: { sent: 'stop_token_ids' },
  includeStopStrInOutput: { sent: 'include_stop_str_in_output' },
  ignoreEos: { sent: 'ignore_eos' },
  skipSpecialTokens: { sent: 'skip_special_tokens' },
  guide: { sent: 'guided_json / guided_regex / guided_choice / guided_grammar (guides.ts)' },
  n: { refused: 'one upstream sequence per request' },
  bestOf: { refused: 'one upstream sequence per request' },
  useBeamSearch: { refused: 'one upstream sequence per request' },
  lengthPenalty: { edge: 'read only with beam search, which is refused' },
  earlyStopping: { edge: 'read only with beam search, which is refused' },
  logprobs: { refused: 'the upstream\'s logprobs are not relayed' },
  promptLogprobs: { refused: 'the upstream\'s logprobs are not relayed' },
};

/** vLLM disables top-k with -1; our params also allow 0 for "off". */
function vllmTopK(topK: number): number {
  return topK > 0 ? topK : -1;
}

/**
 * The JSON body. `seed` is a uint64 on our side and an int64 in the OpenAI schema: it is
 * sent as the int64 with the same bits, which is how this project's server (and vLLM's
 * torch.long) read it back; the one casualty is 2^64-1, whose int64 is -1, "no seed" to
 * both. Written into the text by hand since JSON.stringify cannot
 * emit a bigint and a Number would round seeds above 2^53.
 */
export function completionRequestBody(options: CompletionRequestOptions): string {
  const { params } = options;
  const body: Record<string, unknown> = {
    model: options.model,
    prompt: options.promptTokenIds,
    stream: true,
    stream_options: { include_usage: true, continuous_usage_stats: true },
    max_tokens: params.maxTokens,
    min_tokens: params.minTokens,
    temperature: params.temperature,
    top_k: vllmTopK(params.topK),
    top_p: params.topP,
    min_p: params.minP,
    repetition_penalty: params.repetitionPenalty,
    presence_penalty: params.presencePenalty,
    frequency_penalty: params.frequencyPenalty,
    stop: params.stop,
    stop_token_ids: params.stopTokenIds,
    include_stop_str_in_output: params.includeStopStrInOutput,
    ignore_eos: params.ignoreEos,
    skip_special_tokens: params.skipSpecialTokens,
  };
  // Structured output is the upstream's to enforce (remote-guides.ts).
  if (params.guide !== undefined) Object.assign(body, guidedFields(params.guide.request));
  if (params.logitBias !== undefined) body.logit_bias = Object.fromEntries(params.logitBias);
  if (options.tokenIds === 'logprobs') {
    body.logprobs = 0;
    body.return_tokens_as_token_ids = true;
  }
  const json = JSON.stringify(body);
  if (params.seed === undefined) return json;
  return `${json.slice(0, -1)},"seed":${BigInt.asIntN(64, params.seed)}}`;
}
