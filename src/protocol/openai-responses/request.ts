/**
 * Request schema of `POST /v1/responses` (OpenAI's Responses API, the part vLLM's
 * ResponsesRequest serves without a tool server): `input` as text or items (messages,
 * function calls, function call outputs, reasoning), `instructions`, function `tools` and
 * `tool_choice`, `text.format`, `max_output_tokens`, `temperature` / `top_p` / `top_k`,
 * `stream`, `store` and `previous_response_id`.
 *
 * Built-in tools (web search, file search, code interpreter, MCP, ...) need a tool server
 * this server does not run: they are refused by name rather than ignored.
 */
import { z } from 'zod';
import { isObject, optional, str, withDefault } from '../fields.js';
import { laxBool as bool, laxFloatIn as floatIn, laxIntIn as intIn } from '../lax.js';
import { requiredString } from '../openai-common.js';

const jsonObject = (what: string) => z.record(z.string(), z.unknown(), { error: `must be ${what}` });

const InputTextSchema = z.object({ type: z.literal('input_text'), text: str });
const OutputTextSchema = z.object({ type: z.literal('output_text'), text: str });
const RefusalSchema = z.object({ type: z.literal('refusal'), refusal: str });
const InputImageSchema = z.object({
  type: z.literal('input_image'),
  image_url: optional(str),
  file_id: optional(str),
  detail: optional(z.enum(['auto', 'low', 'high'], { error: 'must be "auto", "low" or "high"' })),
});

export const InputContentSchema = z.discriminatedUnion('type', [InputTextSchema, OutputTextSchema, RefusalSchema, InputImageSchema], {
  error: 'must be a content part of type "input_text", "input_image", "output_text" or "refusal"',
});
export type InputContent = z.output<typeof InputContentSchema>;

const MessageItemSchema = z.object({
  type: optional(z.literal('message')),
  id: optional(str),
  role: z.enum(['user', 'system', 'developer', 'assistant'], { error: 'must be "user", "system", "developer" or "assistant"' }),
  content: z.union([str, z.array(InputContentSchema, { error: 'must be a string or a list of content parts' })], {
    error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string or a list of content parts'),
  }),
  status: optional(str),
});

const FunctionCallItemSchema = z.object({
  type: z.literal('function_call'),
  id: optional(str),
  call_id: requiredString,
  name: requiredString,
  arguments: str,
  status: optional(str),
});

const FunctionCallOutputItemSchema = z.object({
  type: z.literal('function_call_output'),
  id: optional(str),
  call_id: requiredString,
  output: z.union([str, z.array(InputContentSchema)], { error: 'must be a string or a list of content parts' }),
  status: optional(str),
});

const ReasoningItemSchema = z.object({
  type: z.literal('reasoning'),
  id: optional(str),
  summary: optional(z.array(z.object({ text: str }))),
  content: optional(z.array(z.object({ text: str }))),
  encrypted_content: optional(str),
});

/** One input item; a message may leave out its "type" (OpenAI's EasyInputMessage). */
export const InputItemSchema = z.preprocess(
  (item) => (isObject(item) && item.type === undefined && 'role' in item ? { ...item, type: 'message' } : item),
  z.discriminatedUnion('type', [MessageItemSchema.extend({ type: z.literal('message') }), FunctionCallItemSchema, FunctionCallOutputItemSchema, ReasoningItemSchema], {
    error: 'must be an input item: a message {"role", "content"}, a "function_call", a "function_call_output" or a "reasoning" item',
  }),
);
export type InputItem = z.output<typeof InputItemSchema>;

const FunctionToolSchema = z.object(
  {
    type: z.literal('function', { error: 'must be "function": built-in tools (web search, file search, code interpreter, MCP, ...) are not available here' }),
    name: requiredString,
    description: optional(str),
    parameters: optional(jsonObject('a JSON Schema object')),
    strict: optional(bool),
  },
  { error: 'must be a function tool {"type": "function", "name", "parameters"}' },
);

const ToolChoiceSchema = z.union(
  [z.enum(['none', 'auto', 'required']), z.object({ type: z.literal('function'), name: requiredString })],
  { error: 'must be "none", "auto", "required" or {"type": "function", "name": ...}' },
);

const TextFormatSchema = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('text') }),
    z.object({ type: z.literal('json_object') }),
    z.object({
      type: z.literal('json_schema'),
      name: optional(str),
      schema: jsonObject('a JSON Schema object'),
      description: optional(str),
      strict: optional(bool),
    }),
  ],
  { error: 'must be {"type": "text"}, {"type": "json_object"} or {"type": "json_schema", "name", "schema"}' },
);

export const ResponsesRequestSchema = z
  .object(
    {
      model: optional(str),
      input: z.union([str, z.array(InputItemSchema, { error: 'must be a string or a list of input items' })], {
        error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string or a list of input items'),
      }),
      instructions: optional(str),
      tools: optional(z.array(FunctionToolSchema, { error: 'must be a list of tools' })),
      tool_choice: optional(ToolChoiceSchema),
      parallel_tool_calls: optional(bool),
      text: optional(z.object({ format: optional(TextFormatSchema) })),
      max_output_tokens: optional(intIn({ min: 1 })),
      temperature: optional(floatIn({ min: 0, max: 2 })),
      top_p: optional(floatIn({ min: 0, max: 1, minExclusive: true })),
      // vLLM's extra.
      top_k: optional(intIn({ min: -1 })),
      stream: withDefault(bool, false),
      // OpenAI stores by default; here that means this process's bounded memory (serving-responses' store).
      store: withDefault(bool, true),
      previous_response_id: optional(str),
      background: optional(bool),
      metadata: optional(z.record(z.string(), str, { error: 'must be an object of strings' })),
      user: optional(str),
      truncation: optional(z.enum(['auto', 'disabled'], { error: 'must be "auto" or "disabled"' })),
      reasoning: optional(z.object({ effort: optional(str), summary: optional(str) }).loose()),
    },
    { error: 'must be a JSON object' },
  )
  .superRefine((request, ctx) => {
    if (request.background) ctx.addIssue({ code: 'custom', path: ['background'], message: 'is not supported: responses are generated while the request is open' });
    const choice = request.tool_choice;
    if (typeof choice === 'object' && !(request.tools ?? []).some((tool) => tool.name === choice.name)) {
      ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: `names "${choice.name}", which is not one of the tools` });
    }
  });
export type ResponsesRequest = z.output<typeof ResponsesRequestSchema>;
