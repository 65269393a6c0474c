/**
 * Reads PEFT adapter folders over HTTP, for the homes without a file system (workerd, a
 * page): an adapter's path is a URL (absolute, or relative to `base`) of a folder serving
 * adapter_config.json and adapter_model.safetensors.
 */
import { fileTooLarge } from './adapter-limits.js';
import type { AdapterReader } from './lora-registry.js';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from './peft-adapter.js';

export function fetchAdapterReader(fetchFn: typeof fetch = globalThis.fetch.bind(globalThis), base?: string): AdapterReader {
  return async (path, limits) => {
    let folder: URL;
    try {
      folder = new URL(path.endsWith('/') ? path : `${path}/`, base);
    } catch {
      throw new Error(`"${path}" is not a URL${base ? ` (relative to ${base})` : ''}; adapters are fetched here`);
    }
    const get = async (file: string): Promise<Response> => {
      const url = new URL(file, folder).href;
      const response = await fetchFn(url).catch((error: unknown) => {
        throw new Error(`cannot download ${url}: ${(error as Error).message}`);
      });
      if (!response.ok) throw new Error(`cannot download ${url}: HTTP ${response.status}`);
      return response;
    };
    const configBytes = await readCapped(await get(ADAPTER_CONFIG_FILE), ADAPTER_CONFIG_FILE, limits?.maxConfigBytes);
    let config: unknown;
    try {
      config = JSON.parse(new TextDecoder().decode(configBytes));
    } catch (error) {
      throw new Error(`${ADAPTER_CONFIG_FILE} is not valid JSON: ${(error as Error).message}`);
    }
    const weights = await readCapped(await get(ADAPTER_WEIGHTS_FILE), ADAPTER_WEIGHTS_FILE, limits?.maxWeightsBytes);
    return { config, weights };
  };
}

/** A response's body, refused (and the download cancelled) once past `limit` bytes: the declared length first, then as it streams. */
async function readCapped(response: Response, file: string, limit = Infinity): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limit) {
    await response.body?.cancel();
    throw fileTooLarge(file, declared, limit);
  }
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      throw fileTooLarge(file, total, limit);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
