/**
 * Request schema of MindIE's `POST /generate` (the vLLM 0.6.4 legacy API as MindIE
 * documents it). Ranges, types and defaults are the spec's; null means "not given" for
 * every optional field, and unknown fields are ignored, as vLLM's legacy server does.
 *
 * top_k (the spec leaves its default to the backend): when absent, the model's
 * generation_config top_k applies, else top-k is disabled; a value >= the vocabulary size
 * also disables it (the spec clamps it to vocabSize, which keeps every token). That
 * resolution happens in sampling-params.ts.
 */
import { z } from 'zod';
import { SENTENCE } from '../common/zod-issues.js';
import {
  INT32_MAX,
  INT32_MIN,
  UINT64_MAX,
  bool,
  checkedField,
  codePointLength,
  floatIn,
  intIn,
  isObject,
  nonEmptyStr,
  optional,
  str,
  toBigIntInRange,
  withDefault,
} from './fields.js';

/** "0 KB < Number of characters ≤ 4 MB", read as 4 * 1024 * 1024 characters. */
export const MINDIE_PROMPT_MAX_CHARS = 4 * 1024 * 1024;
/** Limit on one stop string, and on the total length of a stop list. */
export const MINDIE_STOP_MAX_CHARS = 32 * 1024;
/** Upper bound of n and best_of. */
export const MINDIE_MAX_SEQUENCES = 128;

/**
 * A media part's URL or path: the spec's string form, or the OpenAI object form
 * {"url": "..."} that clients built for chat send too. The shape is kept (not flattened
 * to a string) so that errors about the media name the field the client wrote.
 */
const mediaReference = checkedField((input, report): string | { url: string } => {
  if (typeof input === 'string') {
    if (input === '') report('must not be empty');
    return input;
  }
  if (isObject(input)) {
    const url = input.url;
    if (typeof url !== 'string') report('must be a non-empty string', { path: ['url'], input: url });
    else if (url === '') report('must not be empty', { path: ['url'], input: url });
    return { url: url as string };
  }
  report('must be a non-empty string or an object with a non-empty "url"');
  return '';
});

const MindieTextPartSchema = z.object({ type: z.literal('text'), text: nonEmptyStr });
const MindieImagePartSchema = z.object({ type: z.literal('image_url'), image_url: mediaReference });
const MindieVideoPartSchema = z.object({ type: z.literal('video_url'), video_url: mediaReference });
const MindieAudioPartSchema = z.object({ type: z.literal('audio_url'), audio_url: mediaReference });

export const MindiePromptPartSchema = z.discriminatedUnion('type', [
  MindieTextPartSchema,
  MindieImagePartSchema,
  MindieVideoPartSchema,
  MindieAudioPartSchema,
]);
export type MindiePromptPart = z.output<typeof MindiePromptPartSchema>;

const MindiePromptListSchema = z
  .array(MindiePromptPartSchema, { error: 'must be a non-empty string or a non-empty list of parts' })
  .min(1, { error: 'must not be an empty list' })
  .superRefine((parts, ctx) => {
    let chars = 0;
    for (const part of parts) if (part.type === 'text') chars += codePointLength(part.text);
    if (chars > MINDIE_PROMPT_MAX_CHARS) {
      ctx.addIssue({
        code: 'custom',
        message: `the text parts of prompt must have at most ${MINDIE_PROMPT_MAX_CHARS} characters in total, got ${chars}`,
        params: SENTENCE,
      });
    }
  });

const MindiePromptStringSchema = z
  .string()
  .min(1, { error: 'must not be empty' })
  .refine((s) => s.length <= MINDIE_PROMPT_MAX_CHARS || codePointLength(s) <= MINDIE_PROMPT_MAX_CHARS, {
    error: `must have at most ${MINDIE_PROMPT_MAX_CHARS} characters`,
  });

const MindiePromptSchema = z.union([MindiePromptStringSchema, MindiePromptListSchema], {
  error: (issue) => (issue.input === undefined ? 'is required' : 'must be a non-empty string or a non-empty list of parts'),
});

const mindieSeed = checkedField((input, report): bigint | undefined => {
  if (input === undefined || input === null) return undefined;
  const seed = toBigIntInRange(input, 1n, UINT64_MAX);
  if (seed === undefined) report(`must be an integer in (0, ${UINT64_MAX}]`);
  return seed;
});

/** "List[string] or string"; an empty list is null. Normalised to a list. */
const mindieStop = checkedField((input, report): string[] => {
  if (input === undefined || input === null) return [];
  if (typeof input === 'string') {
    const length = codePointLength(input);
    if (length < 1 || length > MINDIE_STOP_MAX_CHARS) report(`must have 1 to ${MINDIE_STOP_MAX_CHARS} characters`);
    return [input];
  }
  if (!Array.isArray(input)) {
    report('must be a string or a list of strings');
    return [];
  }
  let total = 0;
  for (const [i, item] of input.entries()) {
    if (typeof item !== 'string') {
      report('must be a string', { path: [i], input: item });
      return [];
    }
    if (item.length === 0) {
      report('must not be empty', { path: [i], input: item });
      return [];
    }
    total += codePointLength(item);
  }
  if (total > MINDIE_STOP_MAX_CHARS) {
    report(`must have at most ${MINDIE_STOP_MAX_CHARS} characters in total over all its strings, got ${total}`, {
      input: undefined,
    });
  }
  return input as string[];
});

/** "List[int32]. Elements whose data type is not int32 will be ignored." */
const mindieStopTokenIds = checkedField((input, report): number[] => {
  if (input === undefined || input === null) return [];
  if (!Array.isArray(input)) {
    report('must be a list of int32 token ids');
    return [];
  }
  return input.filter(
    (id): id is number => typeof id === 'number' && Number.isInteger(id) && id >= INT32_MIN && id <= INT32_MAX,
  );
});

/** The LoRA id; the spec's own example sends the Python spelling "None" for "no adapter". */
const mindieModel = optional(str).transform((model) =>
  model === undefined || model === '' || model === 'None' ? undefined : model,
);

export const MindieGenerateRequestSchema = z
  .object(
    {
      prompt: MindiePromptSchema,
      max_tokens: optional(intIn({ min: 0, minExclusive: true, max: INT32_MAX })),
      repetition_penalty: optional(floatIn({ min: 0, minExclusive: true, max: 2 })),
      presence_penalty: optional(floatIn({ min: -2, max: 2 })),
      frequency_penalty: optional(floatIn({ min: -2, max: 2 })),
      temperature: optional(floatIn({ min: 0 })),
      top_p: optional(floatIn({ min: 1e-6, minExclusive: true, max: 1 })),
      top_k: optional(intIn({ min: 0, minExclusive: true, max: INT32_MAX })),
      seed: mindieSeed,
      stream: withDefault(bool, false),
      stop: mindieStop,
      stop_token_ids: mindieStopTokenIds,
      model: mindieModel,
      include_stop_str_in_output: withDefault(bool, false),
      skip_special_tokens: withDefault(bool, true),
      ignore_eos: withDefault(bool, false),
      best_of: optional(intIn({ min: 1, max: MINDIE_MAX_SEQUENCES })),
      n: optional(intIn({ min: 1, max: MINDIE_MAX_SEQUENCES })),
    },
    { error: 'must be a JSON object' },
  )
  .superRefine((req, ctx) => {
    const n = req.n ?? 1;
    if (req.best_of !== undefined && req.best_of < n) {
      ctx.addIssue({
        code: 'custom',
        path: ['best_of'],
        message: `best_of must be greater than or equal to n, got n=${n} and best_of=${req.best_of}`,
        params: SENTENCE,
      });
    }
  });

export type MindieGenerateRequest = z.output<typeof MindieGenerateRequestSchema>;

/** The prompt's text: the string itself, or the text parts joined by newlines (as vLLM joins chat text parts). */
export function mindiePromptText(prompt: MindieGenerateRequest['prompt']): string {
  if (typeof prompt === 'string') return prompt;
  return prompt.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
}

/** Non-text parts of a multimodal prompt (none for a string prompt). */
export function mindieMediaParts(prompt: MindieGenerateRequest['prompt']): { index: number; type: string }[] {
  if (typeof prompt === 'string') return [];
  return prompt.flatMap((part, index) => (part.type === 'text' ? [] : [{ index, type: part.type }]));
}
