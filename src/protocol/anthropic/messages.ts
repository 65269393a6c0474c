/**
 * Request schema of `POST /v1/messages` and `POST /v1/messages/count_tokens` (Anthropic's
 * Messages API, as vLLM's entrypoints/anthropic/protocol.py and llama.cpp's server take it).
 *
 * Content blocks are checked per type, so a malformed block is refused with its path
 * ("messages[1].content[0].input"); fields the API has and the server does not use
 * (metadata, thinking, service_tier, cache_control on blocks) are accepted and ignored.
 */
import { z } from 'zod';
import { optional, str } from '../fields.js';
import { laxBool as bool, laxFloatIn as floatIn, laxIntIn as intIn } from '../lax.js';
import { requiredString } from '../openai-common.js';

const jsonObject = (what: string) => z.record(z.string(), z.unknown(), { error: `must be ${what}` });

const ImageSourceSchema = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('base64'), media_type: requiredString, data: requiredString }),
    z.object({ type: z.literal('url'), url: requiredString }),
  ],
  { error: 'must be {"type": "base64", "media_type", "data"} or {"type": "url", "url"}' },
);

export const TextBlockSchema = z.object({ type: z.literal('text'), text: str });
export const ImageBlockSchema = z.object({ type: z.literal('image'), source: ImageSourceSchema });

/** What a tool_result carries: text, or text and image blocks. */
const ToolResultContentSchema = z.union([str, z.array(z.discriminatedUnion('type', [TextBlockSchema, ImageBlockSchema]))], {
  error: 'must be a string or a list of text and image blocks',
});

export const ContentBlockSchema = z.discriminatedUnion(
  'type',
  [
    TextBlockSchema,
    ImageBlockSchema,
    z.object({ type: z.literal('tool_use'), id: requiredString, name: requiredString, input: jsonObject('an object (the tool\'s arguments)') }),
    z.object({
      type: z.literal('tool_result'),
      tool_use_id: requiredString,
      content: optional(ToolResultContentSchema),
      is_error: optional(bool),
    }),
    // An assistant turn as the client got it back: reasoning it saw is handed to the template, redacted reasoning is opaque.
    z.object({ type: z.literal('thinking'), thinking: str, signature: optional(str) }),
    z.object({ type: z.literal('redacted_thinking'), data: optional(str) }),
  ],
  { error: 'must be a content block of type "text", "image", "tool_use", "tool_result", "thinking" or "redacted_thinking"' },
);
export type ContentBlock = z.output<typeof ContentBlockSchema>;

const MessageSchema = z.object(
  {
    // vLLM also takes system turns inside `messages` (folded into the system prompt).
    role: z.enum(['user', 'assistant', 'system'], { error: 'must be "user" or "assistant"' }),
    content: z.union([str, z.array(ContentBlockSchema, { error: 'must be a string or a list of content blocks' })], {
      error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string or a list of content blocks'),
    }),
  },
  { error: 'must be a message {"role", "content"}' },
);
export type AnthropicMessage = z.output<typeof MessageSchema>;

const ToolSchema = z
  .object(
    {
      // Anthropic's server tools (bash, web_search, ...) carry a versioned type: the server runs no tool itself.
      type: optional(z.literal('custom', { error: 'must be "custom": server tools (web search, code execution, ...) are not available here' })),
      name: requiredString,
      description: optional(str),
      input_schema: jsonObject('a JSON Schema object'),
    },
    { error: 'must be a tool {"name", "input_schema"}' },
  );

const ToolChoiceSchema = z
  .object(
    {
      type: z.enum(['auto', 'any', 'tool', 'none'], { error: 'must be "auto", "any", "tool" or "none"' }),
      name: optional(str),
      disable_parallel_tool_use: optional(bool),
    },
    { error: 'must be an object {"type": "auto" | "any" | "tool" | "none"}' },
  )
  .refine((choice) => choice.type !== 'tool' || (choice.name !== undefined && choice.name !== ''), {
    error: 'needs a "name" when its type is "tool"',
  });

const SystemSchema = z.union([str, z.array(TextBlockSchema, { error: 'must be a string or a list of text blocks' })], {
  error: 'must be a string or a list of text blocks',
});

/** What both endpoints read: the conversation, its system prompt and tools. */
const conversationShape = {
  model: requiredString,
  messages: z
    .array(MessageSchema, { error: (issue) => (issue.input === undefined ? 'is required' : 'must be a list of messages') })
    .min(1, { error: 'must contain at least one message' }),
  system: optional(SystemSchema),
  tools: optional(z.array(ToolSchema, { error: 'must be a list of tools' })),
  tool_choice: optional(ToolChoiceSchema),
  // vLLM's extra (not in Anthropic's API): variables for the chat template.
  chat_template_kwargs: optional(jsonObject('an object')),
};

export const MessagesRequestSchema = z.object(
  {
    ...conversationShape,
    // Required by Anthropic's API and by vLLM.
    max_tokens: z.unknown().superRefine((value, ctx) => {
      if (value === undefined || value === null) ctx.addIssue({ code: 'custom', message: 'is required', input: value });
    }).pipe(intIn({ min: 1 })) as unknown as ReturnType<typeof intIn>,
    stop_sequences: optional(z.array(str, { error: 'must be a list of strings' })),
    stream: optional(bool),
    temperature: optional(floatIn({ min: 0 })),
    top_p: optional(floatIn({ min: 0, max: 1 })),
    top_k: optional(intIn({ min: -1 })),
    output_config: optional(
      z.object({
        format: optional(z.object({ type: z.literal('json_schema'), schema: jsonObject('a JSON Schema object') })),
      }),
    ),
  },
  { error: 'must be a JSON object' },
);
export type MessagesRequest = z.output<typeof MessagesRequestSchema>;

export const CountTokensRequestSchema = z.object(conversationShape, { error: 'must be a JSON object' });
export type CountTokensRequest = z.output<typeof CountTokensRequestSchema>;
