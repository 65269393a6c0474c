import { Hono } from 'hono';
import { ChatCompletionRequestSchema } from '../../protocol/openai-chat.js';
import { ResponsesRequestSchema, type ResponsesRequest } from '../../protocol/openai-responses/request.js';
import { responsesConversation, responsesToChat, type ChatMessageBody } from '../../protocol/openai-responses/to-chat.js';
import { parseRequest } from '../../protocol/validate.js';
import { HttpError } from '../errors.js';
import { jsonResponse } from '../json-body.js';
import { newResponseJob, responseFromChat, responseStream, responsesStreamError, type ResponseObject } from '../responses/serving-responses.js';
import { outputMessage, ResponseStore } from '../responses/store.js';
import { chatChunks, chatNonStreaming } from '../serving/chat.js';
import type { ServingContext } from '../serving/context.js';
import { serveGenerating } from '../serving/spine.js';
import { preFramed, sseResponse } from '../sse.js';
import { chatDialectEndpoint } from './chat-dialect.js';

function responseNotFound(id: string, param: string | null): HttpError {
  // vLLM's wording and status; the id is clipped with the rest of the message (errors.ts).
  return new HttpError(404, 'NotFoundError', `Response with id '${id}' not found.`, param);
}

/**
 * POST /v1/responses and GET /v1/responses/{id}: OpenAI's Responses API, served as vLLM
 * serves it without a tool server, by translating the request into a chat completion
 * (src/protocol/openai-responses/) and the chat output back (../responses/). Stored
 * responses live in this app's bounded memory (../responses/store.ts).
 */
export function responsesRoutes(ctx: ServingContext, store = new ResponseStore()): Hono {
  const routes = new Hono();
  // The conversation each request was translated with, kept for storing its response.
  const conversations = new WeakMap<ResponsesRequest, ChatMessageBody[]>();

  const endpoint = chatDialectEndpoint(ctx, {
    schema: ResponsesRequestSchema,
    toChat(request) {
      let previous: ChatMessageBody[] = [];
      if (request.previous_response_id !== undefined) {
        const stored = store.get(request.previous_response_id);
        if (stored === undefined) throw responseNotFound(request.previous_response_id, 'previous_response_id');
        previous = stored.messages;
      }
      const conversation = responsesConversation(request, previous);
      conversations.set(request, conversation);
      return parseRequest(ChatCompletionRequestSchema, responsesToChat(request, conversation, ctx.engine.info.id));
    },
    async respond(run, chatJob, request) {
      const job = newResponseJob(request, chatJob.model);
      const keep = (response: ResponseObject) => {
        if (!request.store) return;
        const turns = (conversations.get(request) ?? []).filter((message) => message.role !== 'system');
        const reply = outputMessage(response);
        store.put({ response, messages: reply === null ? turns : [...turns, reply] });
      };
      if (request.stream) {
        return sseResponse(responseStream(chatChunks(run, chatJob), job, keep), run, preFramed(responsesStreamError));
      }
      const response = responseFromChat(await chatNonStreaming(run, chatJob), job);
      keep(response);
      return jsonResponse(response);
    },
  });
  routes.post('/v1/responses', serveGenerating(ctx, endpoint));

  routes.get('/v1/responses/:id', (c) => {
    const id = c.req.param('id');
    const stored = store.get(id);
    if (stored === undefined) throw responseNotFound(id, null);
    return c.json(stored.response);
  });

  return routes;
}
