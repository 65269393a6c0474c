/** Request schema of `POST /v1/completions` (vLLM's CompletionRequest). */
import { z } from 'zod';
import { optional, str, withDefault } from './fields.js';
// Numbers and booleans are read as pydantic's lax mode reads them (see lax.ts).
import { laxBool as bool, laxIntIn as intIn } from './lax.js';
import { addCommonOpenAIIssues, openAISamplingShape } from './openai-common.js';
import { promptInputField, type PromptInput } from './prompt-input.js';

export type CompletionPrompt = PromptInput;

const completionPrompt = promptInputField({ item: 'prompt' });

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
