/**
 * An Anthropic Messages request as the chat completion request it means, the way vLLM's
 * AnthropicServingMessages and llama.cpp's server translate it, so the chat route's
 * machinery (template, tools, structured output, sampling) serves it unchanged:
 *
 * - `system` (a string or text blocks) and system turns inside `messages`: one system message;
 * - text and image blocks: content parts (an image's source becomes an image_url);
 * - `tool_use` blocks: the assistant message's tool_calls (input as JSON arguments);
 * - `tool_result` blocks: tool messages before the rest of their user turn (its images in a
 *   user message after them, as vLLM does);
 * - `thinking` blocks: the assistant message's `reasoning` (templates that show reasoning read it);
 * - tool_choice auto / any / tool / none: "auto" / "required" / named / "none";
 *   disable_parallel_tool_use: parallel_tool_calls false;
 * - max_tokens, stop_sequences (stop), temperature, top_p, top_k, output_config.format.
 */
import type { AnthropicMessage, ContentBlock, CountTokensRequest, MessagesRequest } from './messages.js';

type ChatBody = Record<string, unknown>;
type ChatPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

type ImageSource = Extract<ContentBlock, { type: 'image' }>['source'];

function imageUrl(source: ImageSource): string {
  return source.type === 'url' ? source.url : `data:${source.media_type};base64,${source.data}`;
}

/** Claude Code starts its system prompt with a per-request billing line: it says nothing to the model and defeats prefix reuse (vLLM drops it). */
const BILLING_HEADER = 'x-anthropic-billing-header';

function systemPrompt(request: CountTokensRequest): string | undefined {
  const parts: string[] = [];
  const take = (text: string) => {
    if (text !== '' && !text.startsWith(BILLING_HEADER)) parts.push(text);
  };
  if (typeof request.system === 'string') take(request.system);
  else for (const block of request.system ?? []) take(block.text);
  for (const message of request.messages) {
    if (message.role !== 'system') continue;
    if (typeof message.content === 'string') take(message.content);
    else for (const block of message.content) if (block.type === 'text') take(block.text);
  }
  return parts.length > 0 ? parts.join('') : undefined;
}

function toolResultMessages(block: Extract<ContentBlock, { type: 'tool_result' }>): ChatBody[] {
  const content = block.content ?? '';
  if (typeof content === 'string') return [{ role: 'tool', tool_call_id: block.tool_use_id, content }];
  const text = content.flatMap((item) => (item.type === 'text' ? [item.text] : [])).join('\n');
  const images = content.flatMap((item) => (item.type === 'image' ? [{ type: 'image_url', image_url: { url: imageUrl(item.source) } }] : []));
  const messages: ChatBody[] = [{ role: 'tool', tool_call_id: block.tool_use_id, content: text }];
  if (images.length > 0) messages.push({ role: 'user', content: images });
  return messages;
}

function chatMessages(message: AnthropicMessage): ChatBody[] {
  if (typeof message.content === 'string') return [{ role: message.role, content: message.content }];
  const before: ChatBody[] = [];
  const parts: ChatPart[] = [];
  const toolCalls: ChatBody[] = [];
  let reasoning = '';
  for (const block of message.content) {
    switch (block.type) {
      case 'text':
        if (block.text !== '') parts.push({ type: 'text', text: block.text });
        break;
      case 'image':
        parts.push({ type: 'image_url', image_url: { url: imageUrl(block.source) } });
        break;
      case 'tool_use':
        toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input) } });
        break;
      case 'tool_result':
        if (message.role === 'user') before.push(...toolResultMessages(block));
        else parts.push({ type: 'text', text: `Tool result: ${typeof block.content === 'string' ? block.content : JSON.stringify(block.content ?? '')}` });
        break;
      case 'thinking':
        reasoning += block.thinking;
        break;
      case 'redacted_thinking':
        break;
    }
  }
  const chat: ChatBody = { role: message.role };
  if (parts.length === 1 && parts[0]!.type === 'text') chat.content = parts[0]!.text;
  else if (parts.length > 0) chat.content = parts;
  if (toolCalls.length > 0) chat.tool_calls = toolCalls;
  if (reasoning !== '') chat.reasoning = reasoning;
  // A user turn of tool results only is the tool messages alone.
  const empty = chat.content === undefined && toolCalls.length === 0 && reasoning === '';
  if (empty && message.role === 'user') return before;
  if (chat.content === undefined && message.role === 'user') chat.content = '';
  return [...before, chat];
}

function toolChoice(choice: NonNullable<CountTokensRequest['tool_choice']>): unknown {
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return { type: 'function', function: { name: choice.name } };
  }
}

/** The conversation part: messages, tools, tool_choice, template variables (what count_tokens needs too). */
export function anthropicConversationToChat(request: CountTokensRequest): ChatBody {
  const messages: ChatBody[] = [];
  const system = systemPrompt(request);
  if (system !== undefined) messages.push({ role: 'system', content: system });
  for (const message of request.messages) if (message.role !== 'system') messages.push(...chatMessages(message));
  const body: ChatBody = { model: request.model, messages };
  if (request.tools !== undefined && request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: { type: 'object', ...tool.input_schema } },
    }));
  }
  if (request.tool_choice !== undefined) {
    body.tool_choice = toolChoice(request.tool_choice);
    if (request.tool_choice.disable_parallel_tool_use) body.parallel_tool_calls = false;
  }
  if (request.chat_template_kwargs !== undefined) body.chat_template_kwargs = request.chat_template_kwargs;
  return body;
}

/** The whole chat completion request a Messages request stands for. */
export function anthropicToChat(request: MessagesRequest): ChatBody {
  const body = anthropicConversationToChat(request);
  body.max_tokens = request.max_tokens;
  if (request.stop_sequences !== undefined) body.stop = request.stop_sequences;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.top_p !== undefined) body.top_p = request.top_p;
  if (request.top_k !== undefined) body.top_k = request.top_k;
  const format = request.output_config?.format;
  if (format !== undefined) body.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } };
  if (request.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}
