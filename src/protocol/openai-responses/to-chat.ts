/**
 * A Responses request as the chat completion request it means (vLLM's
 * construct_input_messages and its request conversion), so the chat route serves it:
 *
 * - `instructions`: a system message first (instructions never carry over from a previous response);
 * - the previous response's conversation (`previous_response_id`), then `input`: text is a
 *   user message; message items are messages (input_text / output_text parts as text,
 *   input_image as an image_url); function_call items join the assistant message before
 *   them as tool_calls; function_call_output items are tool messages; reasoning items are
 *   the assistant message's `reasoning`;
 * - function tools, tool_choice and parallel_tool_calls as chat's; text.format as
 *   response_format; max_output_tokens as max_tokens; temperature, top_p, top_k.
 */
import { invalidRequest } from '../../common/protocol-error.js';
import type { InputContent, InputItem, ResponsesRequest } from './request.js';

export type ChatMessageBody = Record<string, unknown> & { role: string };

type ChatPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

function contentParts(parts: readonly InputContent[]): string | ChatPart[] {
  const converted = parts.flatMap((part): ChatPart[] => {
    switch (part.type) {
      case 'input_text':
      case 'output_text':
        return [{ type: 'text', text: part.text }];
      case 'refusal':
        return [{ type: 'text', text: part.refusal }];
      case 'input_image':
        // There is no Files API here to resolve a file_id against.
        if (part.image_url === undefined) throw invalidRequest('An input_image needs an "image_url" (a URL or a data: URL); file_id is not supported.', 'input');
        return [{ type: 'image_url', image_url: { url: part.image_url } }];
    }
  });
  const [only] = converted;
  return converted.length === 1 && only!.type === 'text' ? only!.text : converted;
}

function textOf(parts: string | readonly InputContent[]): string {
  if (typeof parts === 'string') return parts;
  return parts.flatMap((part) => (part.type === 'input_text' || part.type === 'output_text' ? [part.text] : [])).join('\n');
}

/** The chat messages of input items, merging an assistant turn's text, reasoning and calls into one message as vLLM does. */
export function itemsToChatMessages(items: readonly InputItem[]): ChatMessageBody[] {
  const messages: ChatMessageBody[] = [];
  const assistant = (): ChatMessageBody | undefined => {
    const last = messages.at(-1);
    return last?.role === 'assistant' ? last : undefined;
  };
  for (const item of items) {
    switch (item.type) {
      case 'function_call': {
        const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
        const previous = assistant();
        if (previous !== undefined) previous.tool_calls = [...((previous.tool_calls as unknown[] | undefined) ?? []), call];
        else messages.push({ role: 'assistant', tool_calls: [call] });
        break;
      }
      case 'function_call_output':
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: textOf(item.output) });
        break;
      case 'reasoning': {
        const text = item.content?.[0]?.text ?? item.summary?.[0]?.text ?? '';
        const previous = assistant();
        if (previous !== undefined && previous.reasoning === undefined) previous.reasoning = text;
        else messages.push({ role: 'assistant', reasoning: text });
        break;
      }
      default: {
        const content = typeof item.content === 'string' ? item.content : contentParts(item.content);
        const previous = assistant();
        // An assistant message after its reasoning (or calls) completes that turn.
        if (item.role === 'assistant' && previous !== undefined && previous.content === undefined) previous.content = content;
        else messages.push({ role: item.role, content });
      }
    }
  }
  return messages;
}

/** The conversation: instructions, the previous response's turns, then this input. */
export function responsesConversation(request: ResponsesRequest, previous: readonly ChatMessageBody[] = []): ChatMessageBody[] {
  const messages: ChatMessageBody[] = [];
  if (request.instructions !== undefined && request.instructions !== '') messages.push({ role: 'system', content: request.instructions });
  messages.push(...previous);
  if (typeof request.input === 'string') messages.push({ role: 'user', content: request.input });
  else messages.push(...itemsToChatMessages(request.input));
  return messages;
}

/** The whole chat completion request, for the conversation `messages` (responsesConversation). */
export function responsesToChat(request: ResponsesRequest, messages: ChatMessageBody[], servedModel: string): Record<string, unknown> {
  const body: Record<string, unknown> = { model: request.model ?? servedModel, messages };
  if (request.tools !== undefined && request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters ?? { type: 'object' } },
    }));
  }
  const choice = request.tool_choice;
  if (choice !== undefined) body.tool_choice = typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } };
  if (request.parallel_tool_calls !== undefined) body.parallel_tool_calls = request.parallel_tool_calls;
  const format = request.text?.format;
  if (format?.type === 'json_schema') {
    body.response_format = { type: 'json_schema', json_schema: { name: format.name ?? 'output', schema: format.schema, strict: format.strict } };
  } else if (format?.type === 'json_object') {
    body.response_format = { type: 'json_object' };
  }
  if (request.max_output_tokens !== undefined) body.max_tokens = request.max_output_tokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.top_p !== undefined) body.top_p = request.top_p;
  if (request.top_k !== undefined) body.top_k = request.top_k;
  if (request.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}
