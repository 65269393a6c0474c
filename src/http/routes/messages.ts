import { requestClient } from '../client-identity.js';
import { Hono } from 'hono';
import { anthropicConversationToChat, anthropicToChat } from '../../protocol/anthropic/to-chat.js';
import { CountTokensRequestSchema, MessagesRequestSchema } from '../../protocol/anthropic/messages.js';
import { ChatCompletionRequestSchema } from '../../protocol/openai-chat.js';
import { parseRequest } from '../../protocol/validate.js';
import { anthropicStreamError } from '../anthropic/errors.js';
import { messageFromChat, messageStream } from '../anthropic/serving-messages.js';
import { prepareChatMedia } from '../chat-media.js';
import { responseId } from '../ids.js';
import { jsonResponse } from '../json-body.js';
import { readJsonBody } from '../request-body.js';
import { chatChunks, chatNonStreaming } from '../serving/chat.js';
import { checkBounds, templateOffLoop, tokenizeBound, type ServingContext } from '../serving/context.js';
import { loadChatRequestMedia } from '../serving/media.js';
import { checkModel } from '../serving/models.js';
import { serveGenerating } from '../serving/spine.js';
import { tokenizeChat } from '../serving/tokenization.js';
import { TokenizeChatRequestSchema } from '../tokenization-schemas.js';
import { namedSseEvent, preFramed, sseResponse } from '../sse.js';
import { chatDialectEndpoint } from './chat-dialect.js';

/**
 * POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API, served as
 * vLLM and llama.cpp serve it, by translating the request into a chat completion
 * (src/protocol/anthropic/) and the chat output back (../anthropic/). Errors on these
 * paths are in Anthropic's shape (anthropicErrors, installed by the app before the checks).
 */
export function messagesRoutes(ctx: ServingContext): Hono {
  const routes = new Hono();
  const { engine } = ctx;

  const endpoint = chatDialectEndpoint(ctx, {
    schema: MessagesRequestSchema,
    toChat: (request) => parseRequest(ChatCompletionRequestSchema, anthropicToChat(request)),
    async respond(run, job, request, call) {
      // Anthropic's ids are "msg_…"; the same base as the request log's.
      const id = responseId('msg', call.c.req.raw, undefined, call.record?.id).replace(/^msg-/, 'msg_');
      if (request.stream) {
        const events = messageStream(chatChunks(run, job), { id, model: job.model, inputTokens: job.promptTokenCount });
        return sseResponse(events, run, preFramed((error) => namedSseEvent('error', JSON.stringify(anthropicStreamError(error)))));
      }
      return jsonResponse(messageFromChat(await chatNonStreaming(run, job), id));
    },
  });
  routes.post('/v1/messages', serveGenerating(ctx, endpoint));

  // The prompt's tokens as /v1/messages would feed them to the model (its chat template, tools and media included).
  routes.post('/v1/messages/count_tokens', async (c) => {
    const request = parseRequest(CountTokensRequestSchema, await readJsonBody(c.req.raw));
    const chat = parseRequest(TokenizeChatRequestSchema, anthropicConversationToChat(request));
    checkModel(request.model, engine.info, engine.adapters);
    checkBounds(ctx, chat);
    const signal = c.req.raw.signal;
    const media = await loadChatRequestMedia(ctx, chat.messages, signal, requestClient(c));
    const { expansion } = await prepareChatMedia(ctx, media, signal, requestClient(c));
    const options = { templateBudget: ctx.limits.templateBudget, templateOffLoop: templateOffLoop(ctx, c), multimodal: expansion, signal, client: requestClient(c) };
    const { count } = await tokenizeChat(chat, engine.tokenizer, ctx.chatTemplate, ctx.limits.maxModelLen, tokenizeBound(ctx), options);
    return c.json({ input_tokens: count });
  });

  return routes;
}
