import { Hono } from 'hono';
import type { ServingContext } from '../serving/context.js';
import { listModels, retrieveModel } from '../serving/models.js';

/** GET /v1/models: the served model and its LoRA adapters, in vLLM's ModelList shape; GET /v1/models/{id}: one card. */
export function modelsRoutes(ctx: ServingContext): Hono {
  const routes = new Hono();
  routes.get('/v1/models', (c) => c.json(listModels(ctx.engine.info, ctx.limits.maxModelLen, ctx.engine.adapters?.list())));
  // Model names may contain "/" (org/name), as OpenAI's clients send them unescaped.
  routes.get('/v1/models/:id{.+}', (c) => c.json(retrieveModel(c.req.param('id'), ctx.engine.info, ctx.limits.maxModelLen, ctx.engine.adapters?.list())));
  return routes;
}
