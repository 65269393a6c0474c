/**
 * Every request parameter the playground exposes: the sampling parameters of the MindIE
 * /generate spec and of the OpenAI-compatible spec table (plus vLLM's min_p/min_tokens,
 * which the engine implements). Ranges are stated as the specs state them; the page
 * checks values with the server's own request schemas (see validation.ts), so the words
 * here are for reading and the slider bounds only for convenience.
 */
import type { ApiFamily, ApiId } from './apis.js';

export type ParamKind = 'float' | 'int' | 'seed' | 'bool' | 'stop' | 'token-ids' | 'json' | 'text';

export type GroupId = 'length' | 'sampling' | 'penalties' | 'stop' | 'sequences' | 'structured';

export const GROUPS: ReadonlyArray<{ id: GroupId; title: string; open: boolean }> = [
  { id: 'length', title: 'Length', open: true },
  { id: 'sampling', title: 'Sampling', open: true },
  { id: 'penalties', title: 'Penalties', open: false },
  { id: 'stop', title: 'Stopping & output', open: false },
  { id: 'sequences', title: 'Sequences & beam search', open: false },
  { id: 'structured', title: 'Structured output', open: false },
];

export interface ParamSpec {
  /** The JSON field name. */
  key: string;
  kind: ParamKind;
  group: GroupId;
  apis: readonly ApiId[];
  /** Allowed values and default, per API family, as the specs give them. */
  rule: Partial<Record<ApiFamily, string>>;
  help: string;
  /** A slider next to the text field, for the knobs people sweep. */
  slider?: { min: number; max: number; step: number };
  /** Booleans: the server's default (the field is sent only when it differs). */
  boolDefault?: boolean;
  /** Shown inside empty fields. */
  placeholder?: Partial<Record<ApiFamily, string>>;
}

const ALL: readonly ApiId[] = ['chat', 'completions', 'generate'];
const OPENAI: readonly ApiId[] = ['chat', 'completions'];

export const PARAMS: readonly ParamSpec[] = [
  {
    key: 'max_tokens',
    kind: 'int',
    group: 'length',
    apis: ALL,
    rule: {
      mindie: 'integer in (0, 2147483647]; default: the server’s maxIterTimes, which also caps it',
      openai: 'integer ≥ 1; default 16; prompt + max_tokens must fit the context',
    },
    help: 'Most tokens to generate.',
    slider: { min: 1, max: 512, step: 1 },
    placeholder: { mindie: 'maxIterTimes', openai: '16' },
  },
  {
    key: 'min_tokens',
    kind: 'int',
    group: 'length',
    apis: OPENAI,
    rule: { openai: 'integer ≥ 0 and ≤ max_tokens; default 0' },
    help: 'EOS and stop tokens are banned until this many tokens were generated (vLLM extension).',
    placeholder: { openai: '0' },
  },
  {
    key: 'ignore_eos',
    kind: 'bool',
    group: 'length',
    apis: ALL,
    rule: { mindie: 'true or false; default false', openai: 'true or false; default false' },
    help: 'Keep generating past the end-of-sequence token, up to max_tokens.',
    boolDefault: false,
  },
  {
    key: 'temperature',
    kind: 'float',
    group: 'sampling',
    apis: ALL,
    rule: {
      mindie: 'float ≥ 0.0 (0 = greedy; ≥ 0.001 and ≤ 2.0 advised); default: the model’s, else 1.0',
      openai: 'float ≥ 0.0 (0 = greedy); default: the model’s generation_config, else 1.0',
    },
    help: 'Randomness: lower is more deterministic, 0 always picks the most likely token.',
    slider: { min: 0, max: 2, step: 0.05 },
    placeholder: { mindie: '1.0', openai: '1.0' },
  },
  {
    key: 'top_p',
    kind: 'float',
    group: 'sampling',
    apis: ALL,
    rule: { mindie: 'float in (1e-6, 1.0]; default 1.0', openai: 'float in (0, 1]; default 1.0 (all tokens)' },
    help: 'Nucleus sampling: keep the most likely tokens whose probabilities add up to top_p.',
    slider: { min: 0.01, max: 1, step: 0.01 },
    placeholder: { mindie: '1.0', openai: '1.0' },
  },
  {
    key: 'top_k',
    kind: 'int',
    group: 'sampling',
    apis: ALL,
    rule: {
      mindie: 'integer in (0, 2147483647]; default: the model’s; ≥ vocabulary size keeps every token',
      openai: '0 or -1 (disabled) or an integer ≥ 1; default disabled',
    },
    help: 'Keep only the k most likely tokens.',
    placeholder: { mindie: 'model', openai: '-1' },
  },
  {
    key: 'min_p',
    kind: 'float',
    group: 'sampling',
    apis: OPENAI,
    rule: { openai: 'float in [0, 1]; default 0 (disabled)' },
    help: 'Drop tokens less likely than min_p × the most likely one (vLLM extension).',
    slider: { min: 0, max: 1, step: 0.01 },
    placeholder: { openai: '0' },
  },
  {
    key: 'seed',
    kind: 'seed',
    group: 'sampling',
    apis: ALL,
    rule: {
      mindie: 'integer in (0, 18446744073709551615] (uint64); default: a random seed per request',
      openai: 'integer in [-9223372036854775808, 9223372036854775807] (int64), -1 = random; default random',
    },
    help: 'The same seed and parameters give the same text, on the server and in the page.',
    placeholder: { mindie: 'random', openai: 'random' },
  },
  {
    key: 'repetition_penalty',
    kind: 'float',
    group: 'penalties',
    apis: ALL,
    rule: { mindie: 'float in (0.0, 2.0]; default 1.0 (off)', openai: 'float > 0; default 1.0 (off)' },
    help: '> 1 discourages tokens already seen in the prompt or output, < 1 rewards them.',
    slider: { min: 0.05, max: 2, step: 0.05 },
    placeholder: { mindie: '1.0', openai: '1.0' },
  },
  {
    key: 'presence_penalty',
    kind: 'float',
    group: 'penalties',
    apis: ALL,
    rule: { mindie: 'float in [-2.0, 2.0]; default 0.0', openai: 'float in [-2.0, 2.0]; default 0.0' },
    help: 'Subtracted once from every token already in the output: > 0 pushes toward new topics.',
    slider: { min: -2, max: 2, step: 0.1 },
    placeholder: { mindie: '0.0', openai: '0.0' },
  },
  {
    key: 'frequency_penalty',
    kind: 'float',
    group: 'penalties',
    apis: ALL,
    rule: { mindie: 'float in [-2.0, 2.0]; default 0.0', openai: 'float in [-2.0, 2.0]; default 0.0' },
    help: 'Subtracted per occurrence of a token in the output: > 0 reduces verbatim repetition.',
    slider: { min: -2, max: 2, step: 0.1 },
    placeholder: { mindie: '0.0', openai: '0.0' },
  },
  {
    key: 'stop',
    kind: 'stop',
    group: 'stop',
    apis: ALL,
    rule: {
      mindie: 'strings of 1 to 32768 characters, 32768 in total; default none',
      openai: 'non-empty strings; default none',
    },
    help: 'One stop string per line; write \\n for a newline, \\t for a tab, \\\\ for a backslash.',
    placeholder: { mindie: 'none', openai: 'none' },
  },
  {
    key: 'stop_token_ids',
    kind: 'token-ids',
    group: 'stop',
    apis: ALL,
    rule: { mindie: 'list of int32 token ids (others are ignored); default none', openai: 'list of token ids; default none' },
    help: 'Token ids that end generation, separated by commas or spaces.',
    placeholder: { mindie: 'none', openai: 'none' },
  },
  {
    key: 'include_stop_str_in_output',
    kind: 'bool',
    group: 'stop',
    apis: ALL,
    rule: { mindie: 'true or false; default false', openai: 'true or false; default false' },
    help: 'Keep the matched stop string at the end of the text.',
    boolDefault: false,
  },
  {
    key: 'skip_special_tokens',
    kind: 'bool',
    group: 'stop',
    apis: ALL,
    rule: { mindie: 'true or false; default true', openai: 'true or false; default true' },
    help: 'Drop special tokens (<s>, </s>, …) from the text.',
    boolDefault: true,
  },
  {
    key: 'n',
    kind: 'int',
    group: 'sequences',
    apis: ALL,
    rule: {
      mindie: 'integer in [1, 128]; default 1; > 1 needs temperature > 0',
      openai: 'integer ≥ 1 (1–10 advised); default 1; > 1 needs temperature > 0 and top_k ≠ 1',
    },
    help: 'Sequences to return, shown side by side: each sampled independently from the same prompt, or with beam search the n best beams.',
    placeholder: { mindie: '1', openai: '1' },
  },
  {
    key: 'best_of',
    kind: 'int',
    group: 'sequences',
    apis: ALL,
    rule: { mindie: 'integer in [1, 128], ≥ n; default n; = n when streaming', openai: 'integer ≥ n; default n; = n when streaming' },
    help: 'Sequences generated, of which the n with the highest cumulative logprob are returned (known only at the end, so streaming needs best_of = n). With beam search: the beam width.',
    placeholder: { mindie: 'n', openai: 'n' },
  },
  {
    key: 'use_beam_search',
    kind: 'bool',
    group: 'sequences',
    apis: OPENAI,
    rule: { openai: 'true or false; default false; needs n > 1, temperature 0, top_p 1, top_k -1, no streaming' },
    help: 'Beam search instead of sampling: keeps best_of beams (n when unset) and returns the n best. Not with streaming (the best beams are known only at the end) or structured output.',
    boolDefault: false,
  },
  {
    key: 'length_penalty',
    kind: 'float',
    group: 'sequences',
    apis: OPENAI,
    rule: { openai: 'float; default 1.0; other values need use_beam_search, best_of > 1 and top_k -1' },
    help: 'Beam search’s penalty on long sequences.',
    placeholder: { openai: '1.0' },
  },
  {
    key: 'guided_json',
    kind: 'json',
    group: 'structured',
    apis: OPENAI,
    rule: { openai: 'a JSON schema (object or string); default none' },
    help: 'Constrain the output to a JSON schema: only tokens that keep it valid JSON of that schema are sampled, and the sequence ends when the value is complete. One structured-output field per request.',
    placeholder: { openai: '{"type": "object"}' },
  },
  {
    key: 'guided_regex',
    kind: 'text',
    group: 'structured',
    apis: OPENAI,
    rule: { openai: 'a regular expression (Python / ECMAScript syntax); default none' },
    help: 'Constrain the whole output to match a regular expression (not on the web-llm engine, which takes JSON schemas and grammars only).',
    placeholder: { openai: '[A-Z][a-z]+ (is|was) [a-z]+\\.' },
  },
  {
    key: 'guided_choice',
    kind: 'json',
    group: 'structured',
    apis: OPENAI,
    rule: { openai: 'a list of strings; default none' },
    help: 'The output is exactly one of these strings.',
    placeholder: { openai: '["yes", "no"]' },
  },
  {
    key: 'response_format',
    kind: 'json',
    group: 'structured',
    apis: OPENAI,
    rule: { openai: '{"type": "text" | "json_object"} or {"type": "json_schema", "json_schema": {"name", "schema"}}; default text' },
    help: 'OpenAI’s structured output: any JSON value (json_object), or JSON of a schema (json_schema).',
    placeholder: { openai: '{"type": "json_object"}' },
  },
  {
    key: 'tools',
    kind: 'json',
    group: 'structured',
    apis: ['chat'],
    rule: { openai: 'a list of {"type": "function", "function": {"name", "description", "parameters"}}; default none' },
    help: 'Functions the model may call. With tool_choice "required" or a named function the call is constrained to the tools’ parameter schemas; "auto" needs a server started with a tool-call parser.',
    placeholder: { openai: '[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]' },
  },
  {
    key: 'tool_choice',
    kind: 'json',
    group: 'structured',
    apis: ['chat'],
    rule: { openai: '"none", "auto", "required" or {"type": "function", "function": {"name"}}; default "auto" with tools' },
    help: 'Whether and which tool to call (JSON: quote the word, e.g. "required").',
    placeholder: { openai: '"required"' },
  },
];

export function paramsFor(api: ApiId): ParamSpec[] {
  return PARAMS.filter((p) => p.apis.includes(api));
}

export function paramSpec(key: string): ParamSpec | undefined {
  return PARAMS.find((p) => p.key === key);
}
