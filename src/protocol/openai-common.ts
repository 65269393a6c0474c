/**
 * Request fields shared by /v1/completions and /v1/chat/completions, as vLLM's
 * OpenAI-compatible server (0.6.x protocol.py) accepts them, with the defaults and
 * constraints of the product's OpenAI spec table. Fields whose default may come from the
 * model's generation_config (temperature, top_p, top_k, min_p, repetition_penalty) stay
 * undefined when not given; sampling-params.ts resolves them.
 *
 * null is accepted as "not given" everywhere except max_tokens, where (as in vLLM) it
 * means "as many tokens as the context allows".
 */
import { z } from 'zod';
import { SENTENCE, showValue } from '../common/zod-issues.js';
import {
  INT64_MAX,
  INT64_MIN,
  checkedField,
  isObject,
  optional,
  str,
  toBigIntInRange,
  withDefault,
} from './fields.js';
// Numbers and booleans are read as pydantic's lax mode reads them (see lax.ts).
import { laxBool as bool, laxFloatIn as floatIn, laxIntIn as intIn, laxNumber, numericLength } from './lax.js';

/** The spec table's max_tokens default. */
export const OPENAI_DEFAULT_MAX_TOKENS = 16;

export const requiredString = z.string({
  error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string'),
});

/**
 * Current vLLM: "top_k must be 0 (disable), or at least 1" (0 is its default, and -1 is
 * quietly accepted as disabled too). vLLM 0.6 refused 0.
 */
const topK = intIn().refine((k) => k >= -1, { error: 'must be 0 or -1 (disabled) or an integer >= 1' });

/** An integer-looking string as a bigint (exact beyond 2^53); other input as laxNumber reads it. */
function laxInteger(input: unknown): unknown {
  return typeof input === 'string' && numericLength(input) && /^\s*[+-]?\d+\s*$/.test(input) ? BigInt(input.trim()) : laxNumber(input);
}

/** A signed 64-bit integer, as vLLM bounds `seed` by torch.long. */
const openAISeed = checkedField((input, report): bigint | undefined => {
  if (input === undefined || input === null) return undefined;
  const seed = toBigIntInRange(laxInteger(input), INT64_MIN, INT64_MAX);
  if (seed === undefined) report(`must be an integer in [${INT64_MIN}, ${INT64_MAX}]`);
  return seed;
});

/** None, a string or a list of strings; normalised to a list. vLLM: "stop cannot contain an empty string." */
const openAIStop = checkedField((input, report): string[] => {
  if (input === undefined || input === null) return [];
  const list = typeof input === 'string' ? [input] : input;
  if (!Array.isArray(list)) {
    report('must be a string or a list of strings');
    return [];
  }
  for (const [i, item] of list.entries()) {
    const path = typeof input === 'string' ? [] : [i];
    if (typeof item !== 'string') report('must be a string', { path, input: item });
    else if (item === '') report('must not be an empty string', { path, input: item });
    else continue;
    return [];
  }
  return list as string[];
});

/** OpenAI's range for a logit_bias value. */
const MAX_LOGIT_BIAS = 100;

/**
 * Token id (as a string, JSON keys being strings) → bias, clamped to [-100, 100] (OpenAI's
 * range) as vLLM's SamplingParams.from_optional clamps it rather than refusing it. A bias
 * that is not a number (or is NaN) is still refused.
 */
const logitBias = checkedField((input, report): Map<number, number> | undefined => {
  if (input === undefined || input === null) return undefined;
  if (!isObject(input)) {
    report('must be an object mapping token ids to bias values');
    return undefined;
  }
  const bias = new Map<number, number>();
  for (const [key, raw] of Object.entries(input)) {
    const value = laxNumber(raw);
    if (!/^-?[0-9]+$/.test(key) || !Number.isSafeInteger(Number(key))) {
      report(`has key ${showValue(key)}, but token ids must be integers`, { input: undefined });
      return undefined;
    }
    if (typeof value !== 'number' || Number.isNaN(value)) {
      report('must be a number', { path: [key], input: value });
      return undefined;
    }
    bias.set(Number(key), Math.min(MAX_LOGIT_BIAS, Math.max(-MAX_LOGIT_BIAS, value)));
  }
  return bias;
});

const StreamOptionsSchema = z.object(
  {
    include_usage: withDefault(bool, true),
    continuous_usage_stats: withDefault(bool, false),
  },
  { error: 'must be an object' },
);

const JsonSchemaFormatSchema = z.object({
  name: requiredString,
  description: optional(str),
  schema: optional(z.unknown()),
  strict: optional(bool),
});

const ResponseFormatSchema = z.object(
  {
    type: z.enum(['text', 'json_object', 'json_schema'], { error: 'must be one of "text", "json_object", "json_schema"' }),
    json_schema: optional(JsonSchemaFormatSchema),
  },
  { error: 'must be an object' },
);

/**
 * vLLM's guided-decoding extensions. The schemas check their shapes; the serving layer
 * compiles them (src/http/guided-decoding.ts) and refuses guided_grammar.
 */
export const GUIDED_DECODING_FIELDS = ['guided_json', 'guided_regex', 'guided_choice', 'guided_grammar'] as const;

export const openAISamplingShape = {
  model: requiredString,
  frequency_penalty: optional(floatIn({ min: -2, max: 2 })),
  presence_penalty: optional(floatIn({ min: -2, max: 2 })),
  logit_bias: logitBias,
  n: withDefault(intIn({ min: 1 }), 1),
  seed: openAISeed,
  stop: openAIStop,
  stream: withDefault(bool, false),
  stream_options: optional(StreamOptionsSchema),
  temperature: optional(floatIn({ min: 0 })),
  top_p: optional(floatIn({ min: 0, minExclusive: true, max: 1 })),
  user: optional(str),
  best_of: optional(intIn({ min: 1 })),
  use_beam_search: withDefault(bool, false),
  top_k: optional(topK),
  min_p: optional(floatIn({ min: 0, max: 1 })),
  repetition_penalty: optional(floatIn({ min: 0, minExclusive: true })),
  length_penalty: withDefault(floatIn(), 1),
  early_stopping: withDefault(z.union([bool, z.literal('never')], { error: 'must be true, false or "never"' }), false),
  stop_token_ids: withDefault(z.array(intIn(), { error: 'must be a list of token ids' }), []),
  include_stop_str_in_output: withDefault(bool, false),
  ignore_eos: withDefault(bool, false),
  min_tokens: withDefault(intIn({ min: 0 }), 0),
  skip_special_tokens: withDefault(bool, true),
  spaces_between_special_tokens: withDefault(bool, true),
  truncate_prompt_tokens: optional(intIn({ min: 1 })),
  prompt_logprobs: optional(intIn({ min: 0 })),
  /** vLLM: generated tokens in logprobs named "token_id:<id>" instead of their text. */
  return_tokens_as_token_ids: withDefault(bool, false),
  response_format: optional(ResponseFormatSchema),
  guided_json: optional(z.union([str, z.record(z.string(), z.unknown())], { error: 'must be a JSON schema (an object or a string)' })),
  guided_regex: optional(str),
  guided_choice: optional(z.array(str, { error: 'must be a list of strings' })),
  guided_grammar: optional(str),
  guided_decoding_backend: optional(str),
  guided_whitespace_pattern: optional(str),
  priority: withDefault(intIn(), 0),
};

/** The common fields after parsing, whichever endpoint they came from. */
export type OpenAISamplingFields = z.output<z.ZodObject<typeof openAISamplingShape>>;

type IssueSink = { addIssue(issue: { code: 'custom'; message: string; path?: PropertyKey[]; params?: object }): void };

/** vLLM's request-level cross-field rules common to both endpoints. */
export function addCommonOpenAIIssues(req: OpenAISamplingFields, ctx: IssueSink): void {
  const sentence = (path: string, message: string) =>
    ctx.addIssue({ code: 'custom', path: [path], message, params: SENTENCE });
  if (req.best_of !== undefined && req.best_of < req.n) {
    sentence('best_of', `best_of must be greater than or equal to n, got n=${req.n} and best_of=${req.best_of}.`);
  }
  if (req.stream_options !== undefined && !req.stream) {
    sentence('stream_options', 'Stream options can only be defined when `stream=True`.');
  }
  const guided = GUIDED_DECODING_FIELDS.filter((f) => f !== 'guided_grammar' && req[f] !== undefined);
  if (guided.length > 1) {
    sentence(
      guided[1]!,
      "You can only use one kind of guided decoding ('guided_json', 'guided_regex' or 'guided_choice').",
    );
  }
  if (req.prompt_logprobs !== undefined && req.prompt_logprobs > 0 && req.stream) {
    sentence('prompt_logprobs', '`prompt_logprobs` are not available when `stream=True`.');
  }
}

/** Names of the guided-decoding (structured output) fields a request sets. */
export function guidedDecodingFields(
  req: Pick<OpenAISamplingFields, (typeof GUIDED_DECODING_FIELDS)[number] | 'response_format'>,
): string[] {
  const fields: string[] = GUIDED_DECODING_FIELDS.filter((f) => req[f] !== undefined);
  if (req.response_format !== undefined && req.response_format.type !== 'text') fields.push('response_format');
  return fields;
}
