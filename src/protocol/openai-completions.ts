/** Request schema of `POST /v1/completions` (vLLM's CompletionRequest). */
import { z } from 'zod';
import { checkedField, optional, str, withDefault } from './fields.js';
// Numbers and booleans are read as pydantic's lax mode reads them (see lax.ts).
import { laxBool as bool, laxIntIn as intIn } from './lax.js';
import { addCommonOpenAIIssues, openAISamplingShape } from './openai-common.js';

export type CompletionPrompt = string | string[] | number[] | number[][];

const PROMPT_SHAPES = 'must be a string, a list of strings, a list of token ids or a list of lists of token ids';

function isTokenId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

const completionPrompt = checkedField((input, report): CompletionPrompt => {
  if (input === undefined) {
    report('is required');
    return '';
  }
  if (typeof input === 'string') return input;
  if (!Array.isArray(input)) {
    report(PROMPT_SHAPES);
    return '';
  }
  // vLLM: "please provide at least one prompt".
  if (input.length === 0) {
    report('must contain at least one prompt');
    return '';
  }
  const first = input[0];
  if (typeof first === 'string') {
    const bad = input.findIndex((p) => typeof p !== 'string');
    if (bad !== -1) report('must be a string, like the other prompts in the list', { path: [bad], input: input[bad] });
    return input as string[];
  }
  if (typeof first === 'number' || typeof first === 'bigint') {
    const bad = input.findIndex((id) => !isTokenId(id));
    if (bad !== -1) report('must be a token id (an integer >= 0)', { path: [bad], input: input[bad] });
    return input as number[];
  }
  if (Array.isArray(first)) {
    for (const [i, ids] of input.entries()) {
      if (!Array.isArray(ids)) {
        report('must be a list of token ids, like the other prompts in the list', { path: [i], input: ids });
        return [];
      }
      if (ids.length === 0) {
        report('must not be an empty list of token ids', { path: [i], input: ids });
        return [];
      }
      const bad = ids.findIndex((id) => !isTokenId(id));
      if (bad !== -1) {
        report('must be a token id (an integer >= 0)', { path: [i, bad], input: ids[bad] });
        return [];
      }
    }
    return input as number[][];
  }
  report(PROMPT_SHAPES);
  return '';
});

export const CompletionRequestSchema = z
  .object(
    {
      ...openAISamplingShape,
      prompt: completionPrompt,
      echo: withDefault(bool, false),
      logprobs: optional(intIn({ min: 0 })),
      // null: as many tokens as the context allows (vLLM); absent: the spec's default 16.
      max_tokens: intIn({ min: 1 }).nullable().optional(),
      suffix: optional(str),
      allowed_token_ids: optional(z.array(intIn({ min: 0 }), { error: 'must be a list of token ids' })),
      add_special_tokens: withDefault(bool, true),
    },
    { error: 'must be a JSON object' },
  )
  .superRefine((req, ctx) => addCommonOpenAIIssues(req, ctx));

export type CompletionRequest = z.output<typeof CompletionRequestSchema>;

export type CompletionPromptInput = { text: string } | { tokenIds: number[] };

/** The individual prompts of a request: vLLM batches a list into one choice set per prompt. */
export function completionPrompts(prompt: CompletionPrompt): CompletionPromptInput[] {
  if (typeof prompt === 'string') return [{ text: prompt }];
  if (prompt.length === 0) return [];
  const first = prompt[0];
  if (typeof first === 'string') return (prompt as string[]).map((text) => ({ text }));
  if (typeof first === 'number') return [{ tokenIds: prompt as number[] }];
  return (prompt as number[][]).map((tokenIds) => ({ tokenIds }));
}
