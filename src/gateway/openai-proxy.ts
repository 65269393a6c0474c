/**
 * The OpenAI routes at the edge: the request is validated here (the same schemas as the
 * local server, so a malformed request gets the same 400 without reaching a GPU), then
 * forwarded as received, in the chosen upstream's vocabulary (dialects.ts), with
 * everything the local server has no implementation of yet (tools, logit_bias, ...)
 * left for the upstream to serve. The upstream's response streams back byte for byte,
 * as it arrives; an upstream error comes back in this API's error shape.
 */
import { checkPromptTokenIds, EngineRequestError } from '../engine/errors.js';
import { UpstreamError, upstreamErrorBody, upstreamFailure } from '../engine/remote/errors.js';
import { ProtocolError } from '../common/protocol-error.js';
import { ChatCompletionRequestSchema } from '../protocol/openai-chat.js';
import { completionPrompts, CompletionRequestSchema } from '../protocol/openai-completions.js';
import { checkedLogitBias } from '../protocol/sampling-params.js';
import { parseRequest } from '../protocol/validate.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { streamingErrorPayload } from '../http/errors.js';
import { translateRequest, type OpenAIRoute } from './dialects.js';
import type { GatewayExchange } from './exchange.js';
import { translateResponse } from './response-dialects.js';
import { tapUsage } from './usage-tap.js';
import { writeJson } from './json-text.js';
import type { UpstreamPool } from './upstream-pool.js';

export const OPENAI_ROUTES: Readonly<Record<string, OpenAIRoute>> = {
  '/v1/completions': 'completions',
  '/v1/chat/completions': 'chat',
};

/** The model whose tokenizer the edge holds: prompts for it are length-checked here. */
export interface EdgeModel {
  name: string;
  tokenizer: Tokenizer;
  maxModelLen: number;
  /**
   * No prompt longer than this many characters fits in maxModelLen tokens: checked before
   * tokenizing, so a huge prompt is refused in microseconds, not after seconds of BPE.
   */
  maxPromptChars: number;
}

/**
 * The character count past which no prompt can fit: each token covers at most its own
 * text's length (its vocabulary entry, which spells a space as one character and a byte
 * as several), times 4 for normalizers that compose characters before splitting.
 */
export function promptCharBound(tokenizer: Tokenizer, maxModelLen: number): number {
  let longest = 1;
  for (let id = 0; id < tokenizer.vocabSize; id++) longest = Math.max(longest, tokenizer.idToToken(id)?.length ?? 0);
  return maxModelLen * longest * 4;
}

function checkCompletionPrompts(request: { prompt: Parameters<typeof completionPrompts>[0]; add_special_tokens: boolean }, model: EdgeModel): void {
  for (const prompt of completionPrompts(request.prompt)) {
    if ('text' in prompt && prompt.text.length > model.maxPromptChars) {
      throw new EngineRequestError(
        `The prompt has ${prompt.text.length} characters: more than fit in this model's context of ${model.maxModelLen} tokens, whatever they tokenize to.`,
      );
    }
    const ids = 'tokenIds' in prompt ? prompt.tokenIds : model.tokenizer.encode(prompt.text, { addSpecialTokens: request.add_special_tokens });
    checkPromptTokenIds(ids, model.tokenizer.vocabSize, model.maxModelLen);
  }
}

async function errorBodyOf(response: Response): Promise<unknown> {
  try {
    return JSON.parse(await response.text());
  } catch {
    return null;
  }
}

export class ModelNotServed extends ProtocolError {
  constructor(model: string) {
    super('not_found', `The model \`${model}\` does not exist.`, 'model');
  }
}

export interface ForwardOptions {
  signal?: AbortSignal;
  /** The request's record: upstream tried, first byte, tokens; its headers go upstream. */
  exchange?: GatewayExchange;
}

/**
 * Forwards one OpenAI request. `body` is the parsed JSON (big integers as bigint);
 * throws what the HTTP error mapping knows (ProtocolError, EngineRequestError,
 * UpstreamError, EngineOverloadedError).
 */
export async function forwardOpenAI(
  route: OpenAIRoute,
  body: unknown,
  pool: UpstreamPool,
  edgeModel: EdgeModel | null,
  options: ForwardOptions = {},
): Promise<Response> {
  const { exchange } = options;
  const schema = route === 'chat' ? ChatCompletionRequestSchema : CompletionRequestSchema;
  const request = parseRequest(schema, body) as { model: string; stream?: boolean; logit_bias?: ReadonlyMap<number, number> };
  if (!pool.models().includes(request.model)) throw new ModelNotServed(request.model);
  if (edgeModel !== null && request.model === edgeModel.name) {
    // The edge holds this model's vocabulary: refuse what the upstream might silently ignore.
    checkedLogitBias(request.logit_bias, edgeModel.tokenizer.vocabSize);
    if (route === 'completions') checkCompletionPrompts(request as unknown as Parameters<typeof checkCompletionPrompts>[0], edgeModel);
  }
  const raw = body as Record<string, unknown>;
  const { response, target, firstByteMs } = await pool.send(
    request.model,
    `/v1/${route === 'chat' ? 'chat/completions' : 'completions'}`,
    (target) => writeJson(translateRequest(raw, route, target)),
    {
      signal: options.signal,
      stream: request.stream === true,
      headers: exchange?.upstreamHeaders,
      onAttempt: (tried) => {
        if (exchange === undefined) return;
        exchange.upstream = tried.name;
        exchange.attempts += 1;
      },
    },
  );
  if (exchange !== undefined) exchange.firstByteMs = firstByteMs;
  if (!response.ok) {
    throw upstreamFailure(response.status, upstreamErrorBody(await errorBodyOf(response)), response.headers.get('retry-after'));
  }
  if (response.body === null) throw new UpstreamError('The upstream answered without a body.');
  const contentType = response.headers.get('content-type') ?? 'application/json';
  const headers = new Headers({ 'content-type': contentType });
  const translated = translateResponse(response.body, contentType, route, target);
  const tapped = exchange === undefined ? translated : tapUsage(translated, contentType, exchange.usage);
  if (!contentType.startsWith('text/event-stream')) return new Response(tapped, { status: response.status, headers });
  headers.set('cache-control', 'no-cache');
  return new Response(relayEvents(tapped), { status: response.status, headers });
}

const encoder = new TextEncoder();

/**
 * The upstream's event stream as it arrives (nothing read ahead of the client). An
 * upstream that breaks the stream off (or goes silent past its idle timeout) cannot be
 * replaced mid-way: the client gets an error event in the API's shape (as vLLM sends
 * one), then `data: [DONE]` as this project's server ends every stream, instead of a
 * stream that just stops.
 */
function relayEvents(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (error) {
          const failure = error instanceof UpstreamError ? error : new UpstreamError(`The upstream broke the stream off: ${(error as Error).message}`);
          controller.enqueue(encoder.encode(`\n\ndata: ${streamingErrorPayload(failure)}\n\ndata: [DONE]\n\n`));
          controller.close();
          return;
        }
        if (chunk.done) controller.close();
        else controller.enqueue(chunk.value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}
