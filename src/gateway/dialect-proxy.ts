/**
 * Anthropic's /v1/messages (and count_tokens) and OpenAI's /v1/responses at the edge.
 * The request is validated here with the local server's schemas, then:
 *
 *  - when every upstream serving the model speaks the dialect (`speaks`, or its dialect's
 *    default: vLLM's current release and llama.cpp's server serve both, OpenAI the
 *    Responses API), forwarded as received with the upstream's model name, its answer
 *    streamed back byte for byte;
 *  - otherwise translated into a chat completion (the same translation the local routes
 *    use: src/protocol/anthropic/, src/protocol/openai-responses/), forwarded through
 *    forwardOpenAI (so each upstream's chat vocabulary applies), and the chat answer or
 *    stream translated back (src/http/anthropic/, src/http/responses/). Responses made
 *    this way are stored in the gateway's bounded memory for previous_response_id.
 *
 * count_tokens needs the model's chat template: it is forwarded to upstreams that speak
 * Anthropic's API and refused (400) by the others.
 */
import { sseDataPayloads } from '../engine/remote/sse.js';
import { UpstreamError, upstreamErrorBody, upstreamFailure, upstreamStreamFailure } from '../engine/remote/errors.js';
import { HttpError } from '../http/errors.js';
import { anthropicStreamError } from '../http/anthropic/errors.js';
import { messageFromChat, messageStream } from '../http/anthropic/serving-messages.js';
import { randomHex } from '../http/ids.js';
import { newResponseJob, responseFromChat, responseStream, responsesStreamError, type ResponseObject } from '../http/responses/serving-responses.js';
import { outputMessage, type ResponseStore } from '../http/responses/store.js';
import type { ChatCompletionChunk, ChatCompletionResponse } from '../http/serving/chat.js';
import { namedSseEvent, preFramed, sseResponse } from '../http/sse.js';
import { CountTokensRequestSchema, MessagesRequestSchema, type MessagesRequest } from '../protocol/anthropic/messages.js';
import { anthropicToChat } from '../protocol/anthropic/to-chat.js';
import { ResponsesRequestSchema } from '../protocol/openai-responses/request.js';
import { responsesConversation, responsesToChat, type ChatMessageBody } from '../protocol/openai-responses/to-chat.js';
import { parseRequest } from '../protocol/validate.js';
import type { Dialect } from './dialects.js';
import { writeJson } from './json-text.js';
import { forwardOpenAI, ModelNotServed, type EdgeModel, type ForwardOptions } from './openai-proxy.js';
import type { UpstreamPool } from './upstream-pool.js';
import type { UpstreamTarget } from './upstreams.js';
import { tapUsage } from './usage-tap.js';

export type DialectRoute = 'messages' | 'count_tokens' | 'responses';

export const DIALECT_ROUTES: Readonly<Record<string, DialectRoute>> = {
  '/v1/messages': 'messages',
  '/v1/messages/count_tokens': 'count_tokens',
  '/v1/responses': 'responses',
};

const SPOKEN_BY_DEFAULT: Readonly<Record<Dialect, readonly string[]>> = {
  vllm: ['messages', 'responses'],
  'llama.cpp': ['messages', 'responses'],
  openai: ['responses'],
};

function speaks(target: UpstreamTarget, route: DialectRoute): boolean {
  const family = route === 'count_tokens' ? 'messages' : route;
  return target.speaks !== undefined ? target.speaks.has(family) : SPOKEN_BY_DEFAULT[target.dialect].includes(family);
}

async function errorBodyOf(response: Response): Promise<unknown> {
  try {
    return JSON.parse(await response.text());
  } catch {
    return null;
  }
}

/** The request as received, with each upstream's own model name; its answer as it comes. */
async function forwardNative(path: string, raw: Record<string, unknown>, model: string, stream: boolean, pool: UpstreamPool, options: ForwardOptions): Promise<Response> {
  const { exchange } = options;
  const { response, firstByteMs } = await pool.send(model, path, (target) => writeJson({ ...raw, model: target.upstreamModel }), {
    signal: options.signal,
    stream,
    headers: exchange?.upstreamHeaders,
    onAttempt: (tried) => {
      if (exchange === undefined) return;
      exchange.upstream = tried.name;
      exchange.attempts += 1;
    },
  });
  if (exchange !== undefined) exchange.firstByteMs = firstByteMs;
  if (!response.ok) throw upstreamFailure(response.status, upstreamErrorBody(await errorBodyOf(response)), response.headers.get('retry-after'));
  if (response.body === null) throw new UpstreamError('The upstream answered without a body.');
  const contentType = response.headers.get('content-type') ?? 'application/json';
  const headers = new Headers({ 'content-type': contentType });
  if (stream) headers.set('cache-control', 'no-cache');
  // Counted as the chat routes are: the key's token budget, /metrics and the request log.
  const body = exchange === undefined ? response.body : tapUsage(response.body, contentType, exchange.usage);
  return new Response(body, { status: response.status, headers });
}

/** The chat chunks of an upstream's chat stream; an error event there is thrown. */
async function* chatChunksOf(body: ReadableStream<Uint8Array>): AsyncGenerator<ChatCompletionChunk> {
  for await (const payload of sseDataPayloads(body)) {
    if (payload === '[DONE]') return;
    const data = JSON.parse(payload) as { error?: unknown; object?: unknown };
    const failure = data.object === 'error' || data.error !== undefined ? upstreamErrorBody(data) : null;
    if (failure !== null) throw upstreamStreamFailure(failure);
    yield data as ChatCompletionChunk;
  }
}

async function chatThrough(chatBody: Record<string, unknown>, pool: UpstreamPool, edgeModel: EdgeModel | null, options: ForwardOptions): Promise<Response> {
  return forwardOpenAI('chat', chatBody, pool, edgeModel, options);
}

/**
 * Serves one dialect request at the edge (see the file's comment). `store` keeps the
 * Responses the gateway made itself by translation.
 */
export async function forwardDialect(
  route: DialectRoute,
  body: unknown,
  pool: UpstreamPool,
  edgeModel: EdgeModel | null,
  store: ResponseStore,
  options: ForwardOptions = {},
): Promise<Response> {
  const raw = body as Record<string, unknown>;
  if (route === 'messages' || route === 'count_tokens') {
    const request = route === 'messages' ? parseRequest(MessagesRequestSchema, body) : parseRequest(CountTokensRequestSchema, body);
    if (!pool.models().includes(request.model)) throw new ModelNotServed(request.model);
    const stream = route === 'messages' && (request as { stream?: boolean }).stream === true;
    const path = route === 'messages' ? '/v1/messages' : '/v1/messages/count_tokens';
    if (pool.candidates(request.model).every((target) => speaks(target, route))) return forwardNative(path, raw, request.model, stream, pool, options);
    if (route === 'count_tokens') {
      throw new HttpError(400, 'BadRequestError', `count_tokens is not available for the model \`${request.model}\`: its upstream does not serve Anthropic's API (set "speaks" in UPSTREAMS if it does).`);
    }
    const messages = request as MessagesRequest;
    const upstream = await chatThrough(anthropicToChat(messages), pool, edgeModel, options);
    const id = `msg_${randomHex()}`;
    if (!stream) return Response.json(messageFromChat((await upstream.json()) as ChatCompletionResponse, id));
    const events = messageStream(chatChunksOf(upstream.body!), { id, model: request.model, inputTokens: 0 });
    return sseResponse(events, () => void upstream.body?.cancel(), preFramed((error) => namedSseEvent('error', JSON.stringify(anthropicStreamError(error)))));
  }

  const request = parseRequest(ResponsesRequestSchema, body);
  const model = request.model ?? edgeModel?.name ?? pool.models()[0]!;
  if (!pool.models().includes(model)) throw new ModelNotServed(model);
  const stored = request.previous_response_id !== undefined ? store.get(request.previous_response_id) : undefined;
  // A previous response the gateway did not make is the upstream's to know.
  if (stored === undefined && pool.candidates(model).every((target) => speaks(target, route))) {
    return forwardNative('/v1/responses', raw, model, request.stream, pool, options);
  }
  if (request.previous_response_id !== undefined && stored === undefined) {
    throw new HttpError(404, 'NotFoundError', `Response with id '${request.previous_response_id}' not found.`, 'previous_response_id');
  }
  const previous: ChatMessageBody[] = stored?.messages ?? [];
  const conversation = responsesConversation(request, previous);
  const upstream = await chatThrough(responsesToChat(request, conversation, model), pool, edgeModel, options);
  const job = newResponseJob(request, model);
  const keep = (response: ResponseObject) => {
    if (!request.store) return;
    const turns = conversation.filter((message) => message.role !== 'system');
    const reply = outputMessage(response);
    store.put({ response, messages: reply === null ? turns : [...turns, reply] });
  };
  if (!request.stream) {
    const response = responseFromChat((await upstream.json()) as ChatCompletionResponse, job);
    keep(response);
    return Response.json(response);
  }
  return sseResponse(responseStream(chatChunksOf(upstream.body!), job, keep), () => void upstream.body?.cancel(), preFramed(responsesStreamError));
}
