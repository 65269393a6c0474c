import { Hono } from 'hono';
import { EmbeddingRequestSchema } from '../../protocol/openai-embeddings.js';
import { parseRequest } from '../../protocol/validate.js';
import { badRequest } from '../errors.js';
import { responseId } from '../ids.js';
import { warnIgnoredFields } from '../ignored-fields.js';
import { jsonResponse } from '../json-body.js';
import { readJsonBody } from '../request-body.js';
import type { ServingContext } from '../serving/context.js';
import { createEmbeddings } from '../serving/embeddings.js';
import { checkModel } from '../serving/models.js';

/** POST /v1/embeddings: OpenAI's embeddings API as vLLM serves it (its "embed" task). */
export function embeddingsRoutes(ctx: ServingContext): Hono {
  const routes = new Hono();
  const { engine } = ctx;

  routes.post('/v1/embeddings', async (c) => {
    const body = await readJsonBody(c.req.raw);
    // vLLM's refusal of the parameter it removed, before the schema drops unknown fields.
    if (body !== null && typeof body === 'object' && 'normalize' in body) {
      throw badRequest('Parameter `normalize` was removed; use `use_activation` instead.', 'normalize');
    }
    const request = parseRequest(EmbeddingRequestSchema, body);
    warnIgnoredFields(EmbeddingRequestSchema, body);
    checkModel(request.model, engine.info);
    const created = Math.floor(Date.now() / 1000);
    const id = responseId('embd', c.req.raw, request.request_id);
    return jsonResponse(await createEmbeddings(ctx, request, { id, created }, c.req.raw.signal));
  });

  return routes;
}

/**
 * What the generation routes answer when the served model is an embedding model: vLLM's
 * 400 naming the API the model does not support (it serves the "embed" task).
 */
export function generationRefusals(ctx: ServingContext): Hono {
  const routes = new Hono();
  const refuse = (api: string) => () => {
    throw badRequest(`The model does not support ${api} API: "${ctx.engine.info.id}" is served for the "embed" task (an embedding model); use /v1/embeddings.`);
  };
  routes.post('/v1/completions', refuse('Completions'));
  routes.post('/v1/chat/completions', refuse('Chat Completions'));
  routes.post('/generate', refuse('Generate'));
  return routes;
}
