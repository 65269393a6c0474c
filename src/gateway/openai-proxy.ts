/**
 * The OpenAI routes at the edge: the request is validated here (the same schemas as the
 * local server, so a malformed request gets the same 400 without reaching a GPU), then
 * forwarded as received, in the chosen upstream's vocabulary (dialects.ts), with
 * everything the local server has no implementation of yet (tools, logit_bias, ...)
 * left for the upstream to serve. The upstream's response streams back byte for byte,
 * as it arrives; an upstream error comes back in this API's error shape.
 */
import { checkPromptTokenIds } from '../engine/errors.js';
import { UpstreamError, upstreamErrorBody, upstreamFailure } from '../engine/remote-errors.js';
import { ProtocolError } from '../protocol/errors.js';
import { ChatCompletionRequestSchema } from '../protocol/openai-chat.js';
import { completionPrompts, CompletionRequestSchema } from '../protocol/openai-completions.js';
import { parseRequest } from '../protocol/validate.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { streamingErrorPayload } from '../http/errors.js';
import { translateRequest, type OpenAIRoute } from './dialects.js';
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
}

function checkCompletionPrompts(request: { prompt: Parameters<typeof completionPrompts>[0]; add_special_tokens: boolean }, model: EdgeModel): void {
  for (const prompt of completionPrompts(request.prompt)) {
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
  signal?: AbortSignal,
): Promise<Response> {
  const schema = route === 'chat' ? ChatCompletionRequestSchema : CompletionRequestSchema;
  const request = parseRequest(schema, body) as { model: string };
  if (!pool.models().includes(request.model)) throw new ModelNotServed(request.model);
  if (route === 'completions' && edgeModel !== null && request.model === edgeModel.name) {
    checkCompletionPrompts(request as unknown as Parameters<typeof checkCompletionPrompts>[0], edgeModel);
  }
  const raw = body as Record<string, unknown>;
  const { response } = await pool.send(request.model, `/v1/${route === 'chat' ? 'chat/completions' : 'completions'}`, (target) =>
    writeJson(translateRequest(raw, route, target)),
    signal,
  );
  if (!response.ok) {
    throw upstreamFailure(response.status, upstreamErrorBody(await errorBodyOf(response)), response.headers.get('retry-after'));
  }
  if (response.body === null) throw new UpstreamError('The upstream answered without a body.');
  const headers = new Headers({ 'content-type': response.headers.get('content-type') ?? 'application/json' });
  if (!headers.get('content-type')!.startsWith('text/event-stream')) return new Response(response.body, { status: response.status, headers });
  headers.set('cache-control', 'no-cache');
  return new Response(relayEvents(response.body), { status: response.status, headers });
}

/**
 * The upstream's event stream as it arrives (nothing read ahead of the client). An
 * upstream that breaks the stream off cannot be replaced mid-way: the client gets an
 * error event in the API's shape (as vLLM sends one) instead of a stream that just stops.
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
          const failure = new UpstreamError(`The upstream broke the stream off: ${(error as Error).message}`);
          controller.enqueue(new TextEncoder().encode(`\n\ndata: ${streamingErrorPayload(failure)}\n\n`));
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
