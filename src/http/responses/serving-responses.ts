/**
 * Responses API objects built from the chat route's output, as vLLM's
 * OpenAIServingResponses builds them from its chat machinery: a whole chat completion
 * becomes a Response; the chat chunks of a stream become the Responses events openai-node
 * accumulates,
 *
 *   response.created, response.in_progress, then per output item
 *   response.output_item.added, (a message) response.content_part.added,
 *   response.output_text.delta..., response.output_text.done, response.content_part.done /
 *   (a call) response.function_call_arguments.delta..., response.function_call_arguments.done,
 *   response.output_item.done; finally response.completed (response.incomplete when
 *   max_output_tokens cut it), each with its sequence_number.
 */
import type { ResponsesRequest } from '../../protocol/openai-responses/request.js';
import { mapError } from '../errors.js';
import { randomHex, unixSeconds } from '../ids.js';
import { firstChoiceDeltas, type ChatCompletionChunk, type ChatCompletionResponse, type ChatFinishReason, type ChatStreamTally } from '../serving/chat.js';
import { namedSseEvent } from '../sse.js';

export interface OutputText {
  type: 'output_text';
  text: string;
  annotations: [];
  logprobs: [];
}

export type OutputItem =
  | { id: string; type: 'message'; status: 'in_progress' | 'completed'; role: 'assistant'; content: OutputText[] }
  | { id: string; type: 'function_call'; status: 'in_progress' | 'completed'; call_id: string; name: string; arguments: string }
  | { id: string; type: 'reasoning'; summary: []; content: Array<{ type: 'reasoning_text'; text: string }>; status?: 'in_progress' | 'completed' };

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete';

export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  background: false;
  error: null;
  incomplete_details: { reason: 'max_output_tokens' } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  metadata: Record<string, string>;
  model: string;
  output: OutputItem[];
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  reasoning: Record<string, unknown> | null;
  store: boolean;
  temperature: number | null;
  text: { format: Record<string, unknown> };
  tool_choice: unknown;
  tools: unknown[];
  top_p: number | null;
  truncation: 'auto' | 'disabled';
  usage: ResponseUsage | null;
  user: string | null;
}

/** What every Response of one request shares. */
export interface ResponseJob {
  id: string;
  createdAt: number;
  model: string;
  request: ResponsesRequest;
}

export function newResponseJob(request: ResponsesRequest, model: string): ResponseJob {
  return { id: `resp_${randomHex()}`, createdAt: unixSeconds(), model, request };
}

function usageOf(inputTokens: number, outputTokens: number): ResponseUsage {
  return {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
}

function responseObject(job: ResponseJob, status: ResponseStatus, output: OutputItem[], usage: ResponseUsage | null): ResponseObject {
  const { request } = job;
  return {
    id: job.id,
    object: 'response',
    created_at: job.createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    metadata: request.metadata ?? {},
    model: job.model,
    output,
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: request.previous_response_id ?? null,
    reasoning: request.reasoning ?? null,
    store: request.store,
    temperature: request.temperature ?? null,
    text: { format: request.text?.format ?? { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: (request.tools ?? []).map((tool) => ({ ...tool, strict: tool.strict ?? null, description: tool.description ?? null, parameters: tool.parameters ?? null })),
    top_p: request.top_p ?? null,
    truncation: request.truncation ?? 'disabled',
    usage,
    user: request.user ?? null,
  };
}

const statusOf = (finish: ChatFinishReason | null): ResponseStatus => (finish === 'length' ? 'incomplete' : 'completed');

const outputText = (text: string): OutputText => ({ type: 'output_text', text, annotations: [], logprobs: [] });

/** A whole chat completion (one choice) as a Response. */
export function responseFromChat(chat: ChatCompletionResponse, job: ResponseJob): ResponseObject {
  const choice = chat.choices[0]!;
  const message = choice.message as typeof choice.message & { reasoning?: string | null; reasoning_content?: string | null };
  const output: OutputItem[] = [];
  const reasoning = message.reasoning ?? message.reasoning_content;
  if (reasoning) output.push({ id: `rs_${randomHex()}`, type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: reasoning }] });
  if (message.content) output.push({ id: `msg_${randomHex()}`, type: 'message', status: 'completed', role: 'assistant', content: [outputText(message.content)] });
  // An upstream's chat completion (the gateway translating) may leave tool_calls out.
  for (const call of message.tool_calls ?? []) {
    output.push({ id: `fc_${randomHex()}`, type: 'function_call', status: 'completed', call_id: call.id, name: call.function.name, arguments: call.function.arguments });
  }
  return responseObject(job, statusOf(choice.finish_reason), output, usageOf(chat.usage?.prompt_tokens ?? 0, chat.usage?.completion_tokens ?? 0));
}

/** The `error` event for a failure after the stream started: OpenAI's fields, and `error` so openai-node raises it as an APIError. */
function errorEvent(error: unknown, sequenceNumber: number): string {
  const { body } = mapError(error);
  const data = { type: 'error', code: body.type, message: body.message, param: body.param, sequence_number: sequenceNumber, error: body.error };
  return namedSseEvent('error', JSON.stringify(data));
}

/** The backstop error event (sse.ts) for a failure outside the stream's own handling. */
export function responsesStreamError(error: unknown): string {
  return errorEvent(error, 0);
}

/**
 * The SSE events of a streamed Response, from the chat chunks (which must carry the final
 * usage chunk: the route asks for include_usage). `onDone` receives the final Response.
 */
export async function* responseStream(
  chunks: AsyncIterable<ChatCompletionChunk>,
  job: ResponseJob,
  onDone: (response: ResponseObject) => void,
): AsyncGenerator<string> {
  let sequence = 0;
  const event = (type: string, fields: Record<string, unknown>) => namedSseEvent(type, JSON.stringify({ type, sequence_number: sequence++, ...fields }));
  const output: OutputItem[] = [];
  // The item being written: its index in `output` and its text so far.
  const state: { open: { item: OutputItem; index: number; text: string } | null } = { open: null };

  const close = function* () {
    if (state.open === null) return;
    const { item, index, text } = state.open;
    state.open = null;
    if (item.type === 'message') {
      yield event('response.output_text.done', { item_id: item.id, output_index: index, content_index: 0, text, logprobs: [] });
      yield event('response.content_part.done', { item_id: item.id, output_index: index, content_index: 0, part: outputText(text) });
      item.content = [outputText(text)];
      item.status = 'completed';
    } else if (item.type === 'function_call') {
      yield event('response.function_call_arguments.done', { item_id: item.id, output_index: index, arguments: text, name: item.name });
      item.arguments = text;
      item.status = 'completed';
    } else {
      yield event('response.reasoning_text.done', { item_id: item.id, output_index: index, content_index: 0, text });
      yield event('response.content_part.done', { item_id: item.id, output_index: index, content_index: 0, part: { type: 'reasoning_text', text } });
      item.content = [{ type: 'reasoning_text', text }];
      item.status = 'completed';
    }
    yield event('response.output_item.done', { output_index: index, item });
  };
  const begin = function* (item: OutputItem) {
    yield* close();
    state.open = { item, index: output.length, text: '' };
    output.push(item);
    yield event('response.output_item.added', { output_index: state.open.index, item: structuredClone(item) });
  };

  const started = responseObject(job, 'in_progress', [], null);
  yield event('response.created', { response: started });
  yield event('response.in_progress', { response: started });
  const tally: ChatStreamTally = { inputTokens: 0, outputTokens: 0, finish: null, stopReason: null };
  try {
    for await (const { reasoning, content, toolCalls } of firstChoiceDeltas(chunks, tally)) {
      if (reasoning) {
        if (state.open?.item.type !== 'reasoning') {
          const item: OutputItem = { id: `rs_${randomHex()}`, type: 'reasoning', summary: [], content: [], status: 'in_progress' };
          yield* begin(item);
          yield event('response.content_part.added', { item_id: item.id, output_index: state.open!.index, content_index: 0, part: { type: 'reasoning_text', text: '' } });
        }
        state.open!.text += reasoning;
        yield event('response.reasoning_text.delta', { item_id: state.open!.item.id, output_index: state.open!.index, content_index: 0, delta: reasoning });
      }
      if (content) {
        if (state.open?.item.type !== 'message') {
          const item: OutputItem = { id: `msg_${randomHex()}`, type: 'message', status: 'in_progress', role: 'assistant', content: [] };
          yield* begin(item);
          yield event('response.content_part.added', { item_id: item.id, output_index: state.open!.index, content_index: 0, part: outputText('') });
        }
        state.open!.text += content;
        yield event('response.output_text.delta', { item_id: state.open!.item.id, output_index: state.open!.index, content_index: 0, delta: content, logprobs: [] });
      }
      for (const call of toolCalls) {
        if (call.id !== undefined) {
          yield* begin({ id: `fc_${randomHex()}`, type: 'function_call', status: 'in_progress', call_id: call.id, name: call.function.name ?? '', arguments: '' });
        }
        const current = state.open;
        if (call.function.arguments && current?.item.type === 'function_call') {
          current.text += call.function.arguments;
          yield event('response.function_call_arguments.delta', { item_id: current.item.id, output_index: current.index, delta: call.function.arguments });
        }
      }
    }
  } catch (error) {
    yield errorEvent(error, sequence++);
    return;
  }
  yield* close();
  const status = statusOf(tally.finish);
  const final = responseObject(job, status, output, usageOf(tally.inputTokens, tally.outputTokens));
  onDone(final);
  yield event(status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final });
}
