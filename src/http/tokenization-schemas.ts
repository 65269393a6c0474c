import { z } from 'zod';
import { bool, intIn, optional, str, withDefault } from '../protocol/fields.js';
import { ChatMessageSchema, ToolSchema } from '../protocol/openai-chat.js';

/**
 * vLLM's /tokenize and /detokenize requests. Unknown fields are ignored, as vLLM's
 * pydantic models allow extra fields. `model` is optional: absent means the served one.
 */
export const TokenizeCompletionRequestSchema = z.object(
  {
    model: optional(str),
    prompt: z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') }),
    add_special_tokens: withDefault(bool, true),
  },
  { error: 'must be a JSON object' },
);

export const TokenizeChatRequestSchema = z.object(
  {
    model: optional(str),
    messages: z.array(ChatMessageSchema, { error: 'must be a list of messages' }).min(1, { error: 'must contain at least one message' }),
    add_generation_prompt: withDefault(bool, true),
    continue_final_message: withDefault(bool, false),
    add_special_tokens: withDefault(bool, false),
    chat_template: optional(str),
    chat_template_kwargs: optional(z.record(z.string(), z.unknown(), { error: 'must be an object' })),
    // The template sees them as chat requests pass them (vLLM's TokenizeChatRequest.tools).
    tools: optional(z.array(ToolSchema, { error: 'must be a list of tools' })),
  },
  { error: 'must be a JSON object' },
);

export const DetokenizeRequestSchema = z.object(
  {
    model: optional(str),
    tokens: z.array(intIn({ min: 0 }), { error: 'must be a list of token ids' }),
  },
  { error: 'must be a JSON object' },
);

export type TokenizeCompletionRequest = z.output<typeof TokenizeCompletionRequestSchema>;
export type TokenizeChatRequest = z.output<typeof TokenizeChatRequestSchema>;
export type DetokenizeRequest = z.output<typeof DetokenizeRequestSchema>;
