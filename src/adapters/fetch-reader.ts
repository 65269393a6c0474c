/**
 * Reads PEFT adapter folders over HTTP, for the homes without a file system (workerd, a
 * page): an adapter's path is a URL (absolute, or relative to `base`) of a folder serving
 * adapter_config.json and adapter_model.safetensors.
 */
import type { AdapterReader } from './lora-registry.js';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from './peft-adapter.js';

export function fetchAdapterReader(fetchFn: typeof fetch = globalThis.fetch.bind(globalThis), base?: string): AdapterReader {
  return async (path) => {
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
    const configResponse = await get(ADAPTER_CONFIG_FILE);
    let config: unknown;
    try {
      config = await configResponse.json();
    } catch (error) {
      throw new Error(`${ADAPTER_CONFIG_FILE} is not valid JSON: ${(error as Error).message}`);
    }
    const weights = new Uint8Array(await (await get(ADAPTER_WEIGHTS_FILE)).arrayBuffer());
    return { config, weights };
  };
}
