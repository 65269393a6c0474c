/**
 * Request schema of `POST /v1/chat/completions` (vLLM's ChatCompletionRequest).
 *
 * Messages keep fields the schema does not know (templates may read them); content parts
 * of every OpenAI/vLLM kind are accepted here. The serving layer fetches and decodes
 * media parts (src/media) and refuses those the served model cannot take.
 */
import { z } from 'zod';
import { SENTENCE } from '../common/zod-issues.js';
import { optional, str, withDefault } from './fields.js';
// Numbers and booleans are read as pydantic's lax mode reads them (see lax.ts).
import { laxBool as bool, laxIntIn as intIn } from './lax.js';
import { addCommonOpenAIIssues, openAISamplingShape, requiredString } from './openai-common.js';

const urlObject = z.object({ url: requiredString }, { error: 'must be an object with a "url"' });

export const TextPartSchema = z.object({ type: z.literal('text'), text: requiredString });
export const ContentPartSchema = z.discriminatedUnion('type', [
  TextPartSchema,
  z.object({
    type: z.literal('image_url'),
    image_url: z.object(
      { url: requiredString, detail: optional(z.enum(['auto', 'low', 'high'])) },
      { error: 'must be an object with a "url"' },
    ),
  }),
  z.object({
    type: z.literal('input_audio'),
    input_audio: z.object(
      { data: requiredString, format: z.enum(['wav', 'mp3', 'flac'], { error: 'must be "wav", "mp3" or "flac"' }) },
      { error: 'must be an object with "data" and "format"' },
    ),
  }),
  z.object({ type: z.literal('audio_url'), audio_url: urlObject }),
  z.object({ type: z.literal('video_url'), video_url: urlObject }),
  z.object({ type: z.literal('refusal'), refusal: requiredString }),
]);
export type ContentPart = z.output<typeof ContentPartSchema>;

const CONTENT_SHAPES = 'must be a string or a list of content parts';
const content = z.union([str, z.array(ContentPartSchema)], {
  error: (issue) => (issue.input === undefined ? 'is required' : CONTENT_SHAPES),
});
const optionalContent = z.union([str, z.array(ContentPartSchema)], { error: CONTENT_SHAPES }).nullish();

const ToolCallSchema = z.object({
  id: requiredString,
  type: z.literal('function'),
  function: z.object({ name: requiredString, arguments: requiredString }),
});

export const ChatMessageSchema = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content, name: optional(str) }),
  z.looseObject({ role: z.literal('developer'), content, name: optional(str) }),
  z.looseObject({ role: z.literal('user'), content, name: optional(str) }),
  z.looseObject({
    role: z.literal('assistant'),
    content: optionalContent,
    name: optional(str),
    tool_calls: optional(z.array(ToolCallSchema, { error: 'must be a list of tool calls' })),
  }),
  z.looseObject({ role: z.literal('tool'), content, tool_call_id: optional(str) }),
]);
export type ChatMessage = z.output<typeof ChatMessageSchema>;

export const ToolSchema = z.object({
  type: z.literal('function'),
  function: z.object({
    name: requiredString,
    description: optional(str),
    parameters: optional(z.record(z.string(), z.unknown())),
  }),
});

const NamedToolChoiceSchema = z.object({
  type: z.literal('function'),
  function: z.object({ name: requiredString }),
});

const toolChoice = z.union([z.literal('none'), z.literal('auto'), z.literal('required'), NamedToolChoiceSchema], {
  error: 'must be "none", "auto", "required" or a named tool {"type": "function", "function": {"name": ...}}',
});

export const ChatCompletionRequestSchema = z
  .object(
    {
      ...openAISamplingShape,
      messages: z
        .array(ChatMessageSchema, {
          error: (issue) => (issue.input === undefined ? 'is required' : 'must be a list of messages'),
        })
        .min(1, { error: 'must contain at least one message' }),
      logprobs: withDefault(bool, false),
      top_logprobs: optional(intIn({ min: 0 })),
      // null or absent: as many tokens as the context allows (vLLM, OpenAI).
      max_tokens: intIn({ min: 1 }).nullable().optional(),
      max_completion_tokens: intIn({ min: 1 }).nullable().optional(),
      tools: optional(z.array(ToolSchema, { error: 'must be a list of tools' })),
      tool_choice: optional(toolChoice),
      parallel_tool_calls: optional(bool),
      echo: withDefault(bool, false),
      add_generation_prompt: withDefault(bool, true),
      continue_final_message: withDefault(bool, false),
      add_special_tokens: withDefault(bool, false),
      documents: optional(z.array(z.record(z.string(), str), { error: 'must be a list of objects of strings' })),
      chat_template: optional(str),
      chat_template_kwargs: optional(z.record(z.string(), z.unknown(), { error: 'must be an object' })),
      request_id: optional(str),
    },
    { error: 'must be a JSON object' },
  )
  .superRefine((req, ctx) => {
    addCommonOpenAIIssues(req, ctx);
    const sentence = (path: string, message: string) =>
      ctx.addIssue({ code: 'custom', path: [path], message, params: SENTENCE });
    if (req.add_generation_prompt && req.continue_final_message) {
      sentence('continue_final_message', 'Cannot set both `continue_final_message` and `add_generation_prompt` to True.');
    }
    if (req.top_logprobs !== undefined && !req.logprobs) {
      sentence('top_logprobs', 'when using `top_logprobs`, `logprobs` must be set to true.');
    }
    const choice = req.tool_choice;
    if (choice !== undefined && choice !== 'none' && req.tools === undefined) {
      sentence('tool_choice', 'When using `tool_choice`, `tools` must be set.');
    }
    if (typeof choice === 'object' && req.tools !== undefined) {
      if (!req.tools.some((tool) => tool.function.name === choice.function.name)) {
        sentence('tool_choice', 'The tool specified in `tool_choice` does not match any of the specified `tools`');
      }
    }
  });

export type ChatCompletionRequest = z.output<typeof ChatCompletionRequestSchema>;

/** The max_tokens a chat request asked for: max_completion_tokens wins (OpenAI's newer name). */
export function requestedChatMaxTokens(req: ChatCompletionRequest): number | null | undefined {
  if (req.max_completion_tokens != null) return req.max_completion_tokens;
  if (req.max_tokens != null) return req.max_tokens;
  return req.max_completion_tokens === null || req.max_tokens === null ? null : undefined;
}

/** The text parts of a message's content joined with newlines, as vLLM flattens them for text-only templates. */
export function messageText(message: ChatMessage): string {
  const value = message.content;
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  return (value as ContentPart[])
    .flatMap((part) => (part.type === 'text' ? [part.text] : part.type === 'refusal' ? [part.refusal] : []))
    .join('\n');
}
