import { requestClient } from '../client-identity.js';
import { refuseUntrustedTemplate } from '../chat-prompt.js';
import { Hono } from 'hono';
import { parseRequest } from '../../protocol/validate.js';
import { prepareChatMedia } from '../chat-media.js';
import { jsonResponse } from '../json-body.js';
import { readJsonBody } from '../request-body.js';
import { checkBodyLists, checkBounds, templateOffLoop, tokenizeBound, type ServingContext } from '../serving/context.js';
import { loadChatRequestMedia } from '../serving/media.js';
import { checkModel } from '../serving/models.js';
import { detokenize, tokenizeChat, tokenizeCompletion } from '../serving/tokenization.js';
import {
  DetokenizeRequestSchema,
  TokenizeChatRequestSchema,
  TokenizeCompletionRequestSchema,
} from '../tokenization-schemas.js';

/** POST /tokenize and POST /detokenize, vLLM's tokenizer endpoints. */
export function tokenizeRoutes(ctx: ServingContext): Hono {
  const routes = new Hono();
  const { engine } = ctx;

  routes.post('/tokenize', async (c) => {
    const body = await readJsonBody(c.req.raw);
    checkBodyLists(ctx, body);
    // vLLM accepts either form; a "messages" field means the chat form.
    if (body !== null && typeof body === 'object' && 'messages' in body) {
      const request = parseRequest(TokenizeChatRequestSchema, body);
      checkModel(request.model, engine.info, engine.adapters);
      checkBounds(ctx, request);
      refuseUntrustedTemplate(ctx.config.trustRequestChatTemplate, request);
      // Media parts are fetched and processed as the chat route does, so the count includes their tokens.
      const media = await loadChatRequestMedia(ctx, request.messages, c.req.raw.signal, requestClient(c));
      const { expansion } = await prepareChatMedia(ctx, media, c.req.raw.signal, requestClient(c));
      const signal = c.req.raw.signal;
      const chat = { templateBudget: ctx.limits.templateBudget, templateOffLoop: templateOffLoop(ctx, c), multimodal: expansion, signal, client: requestClient(c) };
      return jsonResponse(await tokenizeChat(request, engine.tokenizer, ctx.chatTemplate, ctx.limits.maxModelLen, tokenizeBound(ctx), chat));
    }
    const request = parseRequest(TokenizeCompletionRequestSchema, body);
    checkModel(request.model, engine.info, engine.adapters);
    checkBounds(ctx, request);
    return jsonResponse(await tokenizeCompletion(request, engine.tokenizer, ctx.limits.maxModelLen, tokenizeBound(ctx), c.req.raw.signal, requestClient(c)));
  });

  routes.post('/detokenize', async (c) => {
    const request = parseRequest(DetokenizeRequestSchema, await readJsonBody(c.req.raw));
    checkModel(request.model, engine.info, engine.adapters);
    return c.json(detokenize(request, engine.tokenizer));
  });

  return routes;
}
