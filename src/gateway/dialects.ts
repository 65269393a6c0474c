/**
 * Requests in each upstream's own vocabulary. Clients speak vLLM's OpenAI-compatible API
 * (OpenAI's fields plus vLLM's extras: guided_json, top_k, use_beam_search, ...); an
 * upstream that spells a feature differently gets it in its own words, and one that
 * cannot honour a field the request uses makes the gateway refuse the request with a
 * 400 naming that field, since an upstream silently ignoring it would return wrong
 * output with a 200.
 *
 *  - vllm:      vLLM and this project's server: the request as received.
 *  - llama.cpp: llama.cpp's server: guided_json / response_format → json_schema,
 *               named / required tool_choice refused unless the upstream has tool_calls,
 *               guided_choice → a GBNF grammar, repetition_penalty → repeat_penalty,
 *               vLLM's neutral defaults for the samplers llama.cpp turns on by default.
 *  - openai:    the OpenAI API itself: guided_json → response_format (chat), none of vLLM's extras.
 */
import { invalidRequest } from '../common/protocol-error.js';

export const DIALECTS = ['vllm', 'llama.cpp', 'openai'] as const;
export type Dialect = (typeof DIALECTS)[number];

export type OpenAIRoute = 'completions' | 'chat';

type Body = Record<string, unknown>;

/** A value that asks for something: not absent, null, false nor an empty list. */
function asks(value: unknown): boolean {
  if (value === undefined || value === null || value === false) return false;
  return !(Array.isArray(value) && value.length === 0);
}

function refuse(upstream: string, param: string, what?: string): never {
  throw invalidRequest(`${what ?? param} is not supported by the upstream serving this model (${upstream}).`, param);
}

/** Fields that change the output, with the value that means "off", an upstream must understand to be sent. */
const VLLM_EXTRAS: Record<string, unknown> = {
  guided_json: undefined,
  guided_regex: undefined,
  guided_choice: undefined,
  guided_grammar: undefined,
  guided_whitespace_pattern: undefined,
  top_k: -1,
  min_p: 0,
  repetition_penalty: 1,
  use_beam_search: false,
  length_penalty: 1,
  min_tokens: 0,
  stop_token_ids: undefined,
  ignore_eos: false,
  prompt_logprobs: undefined,
  allowed_token_ids: undefined,
  truncate_prompt_tokens: undefined,
  return_tokens_as_token_ids: false,
};

/** vLLM-only fields that change nothing when absent or at these values; dropped for other upstreams. */
const HARMLESS: Record<string, unknown> = {
  guided_decoding_backend: undefined,
  priority: 0,
  skip_special_tokens: true,
  spaces_between_special_tokens: true,
  include_stop_str_in_output: false,
  add_special_tokens: true,
  add_generation_prompt: true,
  continue_final_message: false,
  echo: false,
  early_stopping: false,
  documents: undefined,
  chat_template: undefined,
  mm_processor_kwargs: undefined,
  request_id: undefined,
};

/** The value asks for something other than what `neutral` (undefined: absent) means. */
function differs(value: unknown, neutral: unknown): boolean {
  if (value === undefined || value === null) return false;
  return neutral === undefined ? asks(value) : value !== neutral;
}

function dropHarmless(body: Body, upstream: string): void {
  for (const [field, neutral] of Object.entries(HARMLESS)) {
    if (!(field in body)) continue;
    if (differs(body[field], neutral)) refuse(upstream, field);
    delete body[field];
  }
}

function schemaOf(value: unknown, param: string): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    throw invalidRequest(`${param} must be a JSON Schema (an object or its JSON text).`, param);
  }
}

/** GBNF string literal. */
function gbnfLiteral(text: string): string {
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`).replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t')}"`;
}

/**
 * tool_choice for llama.cpp, which takes only the strings "none", "auto" and "required",
 * and honours "required" only when the model's chat template knows tools (else it
 * answers 200 with no tool call). Refused by name unless the upstream is configured with
 * `tool_calls: true`; then a named function is sent as "required" over that one tool.
 */
function llamaCppToolChoice(out: Body, upstream: string, toolCalls: boolean): void {
  const choice = out.tool_choice;
  if (choice === undefined || choice === null || choice === 'auto' || choice === 'none') return;
  if (!toolCalls) refuse(upstream, 'tool_choice', `tool_choice ${typeof choice === 'string' ? JSON.stringify(choice) : 'naming a function'}`);
  if (choice === 'required') return;
  const name = (choice as { function?: { name?: unknown } }).function?.name;
  const tools = Array.isArray(out.tools) ? (out.tools as Array<{ function?: { name?: unknown } }>) : [];
  const named = tools.filter((tool) => tool.function?.name === name);
  if (named.length === 0) throw invalidRequest(`tool_choice names the function ${JSON.stringify(name)}, which is not in tools.`, 'tool_choice');
  out.tools = named;
  out.tool_choice = 'required';
}

function toLlamaCpp(body: Body, route: OpenAIRoute, upstream: string, toolCalls: boolean): Body {
  const out: Body = { ...body };
  if (route === 'chat') llamaCppToolChoice(out, upstream, toolCalls);
  if (asks(out.guided_json)) out.json_schema = schemaOf(out.guided_json, 'guided_json');
  if (asks(out.guided_choice)) {
    const choices = out.guided_choice as unknown[];
    out.grammar = `root ::= ${choices.map((c) => gbnfLiteral(String(c))).join(' | ')}`;
  }
  // llama.cpp reads response_format itself only on chat completions.
  if (route === 'completions' && asks(out.response_format)) {
    const format = out.response_format as { type?: string; json_schema?: { schema?: unknown }; schema?: unknown };
    if (format.type === 'json_object') out.json_schema = format.schema ?? {};
    else if (format.type === 'json_schema') out.json_schema = format.json_schema?.schema ?? {};
    delete out.response_format;
  }
  for (const field of ['guided_json', 'guided_choice']) delete out[field];
  if (asks(out.guided_regex)) refuse(upstream, 'guided_regex', 'Regular-expression guided decoding (guided_regex)');
  if (asks(out.guided_grammar)) refuse(upstream, 'guided_grammar', "vLLM's grammar syntax (guided_grammar)");
  if (asks(out.use_beam_search)) refuse(upstream, 'use_beam_search', 'Beam search (use_beam_search)');
  const n = typeof out.n === 'number' ? out.n : 1;
  if (typeof out.best_of === 'number' && out.best_of > n) refuse(upstream, 'best_of', `best_of > n (got best_of=${out.best_of})`);
  delete out.best_of;
  for (const field of ['min_tokens', 'stop_token_ids', 'prompt_logprobs', 'allowed_token_ids', 'truncate_prompt_tokens', 'return_tokens_as_token_ids', 'guided_whitespace_pattern', 'length_penalty']) {
    if (differs(out[field], VLLM_EXTRAS[field])) refuse(upstream, field);
    delete out[field];
  }
  if ('repetition_penalty' in out) {
    out.repeat_penalty = out.repetition_penalty;
    delete out.repetition_penalty;
  }
  // llama.cpp's defaults sample differently from vLLM's (top_k 40, top_p 0.95, min_p
  // 0.05, temperature 0.8, unbounded completions): a field left out means vLLM's default.
  out.temperature ??= 1;
  out.top_k ??= -1;
  out.top_p ??= 1;
  out.min_p ??= 0;
  out.repeat_penalty ??= 1;
  if (route === 'completions' && out.max_tokens === undefined) out.max_tokens = 16;
  dropHarmless(out, upstream);
  return out;
}

function toOpenAI(body: Body, route: OpenAIRoute, upstream: string): Body {
  const out: Body = { ...body };
  if (asks(out.guided_json)) {
    if (route !== 'chat') refuse(upstream, 'guided_json', 'Structured output on /v1/completions (guided_json)');
    if (asks(out.response_format)) throw invalidRequest('Send either guided_json or response_format, not both.', 'guided_json');
    out.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: schemaOf(out.guided_json, 'guided_json') } };
    delete out.guided_json;
  }
  for (const [field, neutral] of Object.entries(VLLM_EXTRAS)) {
    if (differs(out[field], neutral)) refuse(upstream, field);
    delete out[field];
  }
  if (route === 'chat' && asks(out.best_of)) refuse(upstream, 'best_of');
  // vLLM's running usage counts (RemoteEngine asks for them): OpenAI knows only include_usage.
  const streamOptions = out.stream_options as Record<string, unknown> | undefined;
  if (streamOptions !== undefined && streamOptions !== null && 'continuous_usage_stats' in streamOptions) {
    const { continuous_usage_stats: _dropped, ...rest } = streamOptions;
    out.stream_options = rest;
  }
  dropHarmless(out, upstream);
  return out;
}

/** `body` (a validated client request for `route`) as the upstream should receive it. Throws ProtocolError naming a field it cannot honour. */
export function translateRequest(
  body: Body,
  route: OpenAIRoute,
  target: { name: string; dialect: Dialect; upstreamModel: string; unsupported: ReadonlySet<string>; toolCalls?: boolean },
): Body {
  for (const field of target.unsupported) if (asks(body[field])) refuse(target.name, field);
  const withModel = { ...body, model: target.upstreamModel };
  switch (target.dialect) {
    case 'vllm':
      return withModel;
    case 'llama.cpp':
      return toLlamaCpp(withModel, route, target.name, target.toolCalls ?? false);
    case 'openai':
      return toOpenAI(withModel, route, target.name);
  }
}
