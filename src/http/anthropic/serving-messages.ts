/**
 * Anthropic Messages responses built from the chat route's output (vLLM's
 * AnthropicServingMessages does the same from its chat serving): a whole chat completion
 * becomes a Message; the chat chunks of a stream become Anthropic's events,
 *
 *   message_start, then per content block content_block_start, content_block_delta...,
 *   content_block_stop, then message_delta (stop_reason, usage), message_stop;
 *
 * blocks in the order the output writes them: thinking (when a reasoning parser gives
 * reasoning), text, one tool_use per call.
 */
import { firstChoiceDeltas, type ChatCompletionChunk, type ChatCompletionResponse, type ChatFinishReason, type ChatStreamTally } from '../serving/chat.js';
import { namedSseEvent } from '../sse.js';
import { anthropicStreamError } from './errors.js';

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

export type AnthropicContentBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export interface AnthropicMessageResponse {
  id: string;
  type: 'message';
  role: 'assistant';
  content: AnthropicContentBlock[];
  model: string;
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

/** What the chat output ended on, in Anthropic's words; `stop_sequence` is the stop string that matched. */
export function stopReasonOf(
  finish: ChatFinishReason | null,
  stopReason: string | number | null | undefined,
  calledTools: boolean,
): { stop_reason: StopReason; stop_sequence: string | null } {
  if (calledTools) return { stop_reason: 'tool_use', stop_sequence: null };
  if (finish === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (typeof stopReason === 'string') return { stop_reason: 'stop_sequence', stop_sequence: stopReason };
  return { stop_reason: 'end_turn', stop_sequence: null };
}

function usage(inputTokens: number, outputTokens: number): AnthropicUsage {
  return { input_tokens: inputTokens, output_tokens: outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

/** A call's arguments as the tool_use input; arguments that are not a JSON object (a cut-off call) become {} as llama.cpp does. */
function toolInput(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Thinking blocks need a signature the client sends back; a local model has none to verify (vLLM sends a random one, llama.cpp an empty one). */
const LOCAL_SIGNATURE = '';

/** A whole chat completion (one choice) as an Anthropic Message. */
export function messageFromChat(chat: ChatCompletionResponse, id: string): AnthropicMessageResponse {
  const choice = chat.choices[0]!;
  const message = choice.message as typeof choice.message & { reasoning?: string | null; reasoning_content?: string | null };
  const content: AnthropicContentBlock[] = [];
  const reasoning = message.reasoning ?? message.reasoning_content;
  if (reasoning) content.push({ type: 'thinking', thinking: reasoning, signature: LOCAL_SIGNATURE });
  if (message.content) content.push({ type: 'text', text: message.content });
  // An upstream's chat completion (the gateway translating) may leave tool_calls out.
  const calls = message.tool_calls ?? [];
  for (const call of calls) content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: toolInput(call.function.arguments) });
  return {
    id,
    type: 'message',
    role: 'assistant',
    content,
    model: chat.model,
    ...stopReasonOf(choice.finish_reason, choice.stop_reason, calls.length > 0),
    usage: usage(chat.usage?.prompt_tokens ?? 0, chat.usage?.completion_tokens ?? 0),
  };
}

type OpenBlock = { kind: 'thinking' | 'text' } | { kind: 'tool_use'; call: number };

/**
 * The SSE events of a streamed Message, from the chat chunks (which must carry the final
 * usage chunk: the route asks for include_usage). An error after the start is an `error`
 * event, as Anthropic's API sends one.
 */
export async function* messageStream(
  chunks: AsyncIterable<ChatCompletionChunk>,
  /** inputTokens: the prompt's, when known before the output (a gateway translating a stream learns it at the end: message_delta carries it too). */
  start: { id: string; model: string; inputTokens: number },
): AsyncGenerator<string> {
  const event = (data: { type: string } & Record<string, unknown>) => namedSseEvent(data.type, JSON.stringify(data));
  // The block being written and its index (-1: none yet).
  const blocks: { open: OpenBlock | null; index: number } = { open: null, index: -1 };
  const stop = function* () {
    if (blocks.open !== null) yield event({ type: 'content_block_stop', index: blocks.index });
    blocks.open = null;
  };
  const begin = function* (block: OpenBlock, contentBlock: Record<string, unknown>) {
    yield* stop();
    blocks.index += 1;
    blocks.open = block;
    yield event({ type: 'content_block_start', index: blocks.index, content_block: contentBlock });
  };

  yield event({
    type: 'message_start',
    message: {
      id: start.id,
      type: 'message',
      role: 'assistant',
      content: [],
      model: start.model,
      stop_reason: null,
      stop_sequence: null,
      usage: usage(start.inputTokens, 0),
    },
  });
  const tally: ChatStreamTally = { inputTokens: start.inputTokens, outputTokens: 0, finish: null, stopReason: null };
  let calledTools = false;
  try {
    for await (const { reasoning, content, toolCalls } of firstChoiceDeltas(chunks, tally)) {
      if (reasoning) {
        if (blocks.open?.kind !== 'thinking') yield* begin({ kind: 'thinking' }, { type: 'thinking', thinking: '', signature: '' });
        yield event({ type: 'content_block_delta', index: blocks.index, delta: { type: 'thinking_delta', thinking: reasoning } });
      }
      if (content) {
        if (blocks.open?.kind !== 'text') yield* begin({ kind: 'text' }, { type: 'text', text: '' });
        yield event({ type: 'content_block_delta', index: blocks.index, delta: { type: 'text_delta', text: content } });
      }
      for (const call of toolCalls) {
        calledTools = true;
        const current = blocks.open;
        if (call.id !== undefined || current?.kind !== 'tool_use' || current.call !== call.index) {
          yield* begin({ kind: 'tool_use', call: call.index }, { type: 'tool_use', id: call.id ?? '', name: call.function.name ?? '', input: {} });
        }
        if (call.function.arguments) {
          yield event({ type: 'content_block_delta', index: blocks.index, delta: { type: 'input_json_delta', partial_json: call.function.arguments } });
        }
      }
    }
  } catch (error) {
    yield namedSseEvent('error', JSON.stringify(anthropicStreamError(error)));
    return;
  }
  yield* stop();
  yield event({ type: 'message_delta', delta: stopReasonOf(tally.finish, tally.stopReason, calledTools), usage: { input_tokens: tally.inputTokens, output_tokens: tally.outputTokens } });
  yield event({ type: 'message_stop' });
}
