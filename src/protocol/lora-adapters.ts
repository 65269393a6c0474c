/** vLLM's LoadLoraAdapterRequest / UnloadLoraAdapterRequest (POST /v1/load_lora_adapter, /v1/unload_lora_adapter). */
import { z } from 'zod';

const name = z.string({ error: 'must be a string' }).trim().min(1, { error: 'must not be empty' });

export const LoadLoraAdapterRequestSchema = z.object({
  lora_name: name.regex(/^[^\s=,]+$/, { error: 'must be a name without spaces, "=" or ","' }),
  lora_path: name,
});

export const UnloadLoraAdapterRequestSchema = z.object({
  lora_name: name,
  /** vLLM's integer id of the adapter; accepted and ignored (names are unique). */
  lora_int_id: z.number().int().nullish(),
});
