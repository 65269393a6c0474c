/**
 * Request schema of `POST /v1/embeddings` (vLLM's EmbeddingCompletionRequest): OpenAI's
 * fields (input, model, encoding_format, dimensions, user) and vLLM's extras
 * (truncate_prompt_tokens, truncation_side, add_special_tokens, embed_dtype, endianness,
 * use_activation). Fields vLLM takes and this server ignores (request_id, cache_salt) are
 * accepted; the ones that change the answer and are not served are refused by name.
 */
import { z } from 'zod';
import { optional, str, withDefault } from './fields.js';
import { laxBool as bool, laxIntIn as intIn } from './lax.js';
import { promptInputField, type PromptInput } from './prompt-input.js';

export type EmbeddingInput = PromptInput;

const embeddingInput = promptInputField({ item: 'input', objects: 'chat messages as embedding input are not served; send the text (or its token ids)' });

export const EmbeddingRequestSchema = z.object(
  {
    input: embeddingInput,
    // vLLM: optional (the served model when left out).
    model: optional(str),
    // "bytes" / "bytes_only" (vLLM's binary responses) are refused by the serving layer with a reason.
    encoding_format: withDefault(z.enum(['float', 'base64', 'bytes', 'bytes_only'], { error: 'must be "float" or "base64"' }), 'float'),
    dimensions: optional(intIn()),
    user: optional(str),
    // -1: the served context (vLLM).
    truncate_prompt_tokens: optional(intIn({ min: -1 })),
    truncation_side: optional(z.enum(['left', 'right'], { error: 'must be "left" or "right"' })),
    add_special_tokens: withDefault(bool, true),
    embed_dtype: withDefault(
      z.enum(['float32', 'float16', 'bfloat16', 'fp8_e4m3', 'fp8_e5m2'], { error: 'must be one of "float32", "float16", "bfloat16", "fp8_e4m3", "fp8_e5m2"' }),
      'float32',
    ),
    endianness: withDefault(z.enum(['native', 'big', 'little'], { error: 'must be "native", "big" or "little"' }), 'native'),
    use_activation: optional(bool),
    priority: withDefault(intIn(), 0),
    request_id: optional(str),
  },
  { error: 'must be a JSON object' },
)
;

export type EmbeddingRequest = z.output<typeof EmbeddingRequestSchema>;

export type EmbeddingInputItem = { text: string } | { tokenIds: number[] };

/** The request's inputs, one vector each: a string, each string of a list, one list of ids, or each list of ids. */
export function embeddingInputs(input: EmbeddingInput): EmbeddingInputItem[] {
  if (typeof input === 'string') return [{ text: input }];
  if (input.length === 0) return [];
  const first = input[0];
  if (typeof first === 'string') return (input as string[]).map((text) => ({ text }));
  if (typeof first === 'number') return [{ tokenIds: input as number[] }];
  return (input as number[][]).map((tokenIds) => ({ tokenIds }));
}
