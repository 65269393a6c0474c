import { Hono } from 'hono';
import { LoadLoraAdapterRequestSchema, UnloadLoraAdapterRequestSchema } from '../../protocol/lora-adapters.js';
import { parseRequest } from '../../protocol/validate.js';
import type { EngineAdapters } from '../../engine/types.js';
import { notFound } from '../errors.js';
import { readJsonBody } from '../request-body.js';
import type { ServingContext } from '../serving/context.js';

/**
 * vLLM's runtime LoRA updates: POST /v1/load_lora_adapter {"lora_name", "lora_path"} and
 * POST /v1/unload_lora_adapter {"lora_name"}, answering with vLLM's plain-text success
 * lines. Off unless the server allows it (allowRuntimeLoraUpdating, vLLM's
 * VLLM_ALLOW_RUNTIME_LORA_UPDATING): a path is read on the server's disk.
 */
export function loraRoutes(ctx: ServingContext): Hono {
  const routes = new Hono();

  const updatable = (): EngineAdapters => {
    const adapters = ctx.engine.adapters;
    if (!adapters?.runtimeUpdates) {
      throw notFound(
        'Loading and unloading LoRA adapters at run time is off: start the server with allowRuntimeLoraUpdating ' +
          '(VLLM_ALLOW_RUNTIME_LORA_UPDATING=True).',
      );
    }
    return adapters;
  };

  routes.post('/v1/load_lora_adapter', async (c) => {
    const adapters = updatable();
    const request = parseRequest(LoadLoraAdapterRequestSchema, await readJsonBody(c.req.raw));
    await adapters.load(request.lora_name, request.lora_path);
    return c.text(`Success: LoRA adapter '${request.lora_name}' added successfully.`);
  });

  routes.post('/v1/unload_lora_adapter', async (c) => {
    const adapters = updatable();
    const request = parseRequest(UnloadLoraAdapterRequestSchema, await readJsonBody(c.req.raw));
    if (!adapters.unload(request.lora_name)) throw notFound(`The lora adapter '${request.lora_name}' cannot be found.`);
    return c.text(`Success: LoRA adapter '${request.lora_name}' removed successfully.`);
  });

  return routes;
}
