/** Reads PEFT adapter folders from disk for the engine (engine/engine-lora.ts). */
import { readFile, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { AdapterPathRefused, type AdapterReader } from '../../adapters/lora-registry.js';
import type { LoraOptions } from '../../engine/engine-lora.js';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, type AdapterFiles } from '../../adapters/peft-adapter.js';
import type { ServerConfig } from '../../config/server-config.js';
import { loraOptionsOf } from '../lora-options.js';

export async function readAdapterDir(path: string): Promise<AdapterFiles> {
  const dir = resolve(path);
  let configText: string;
  try {
    configText = await readFile(join(dir, ADAPTER_CONFIG_FILE), 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(code === 'ENOENT' ? `there is no ${ADAPTER_CONFIG_FILE} in ${dir}` : (error as Error).message);
  }
  let config: unknown;
  try {
    config = JSON.parse(configText);
  } catch (error) {
    throw new Error(`${ADAPTER_CONFIG_FILE} is not valid JSON: ${(error as Error).message}`);
  }
  let weights: Buffer;
  try {
    weights = await readFile(join(dir, ADAPTER_WEIGHTS_FILE));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // PEFT before safetensors wrote adapter_model.bin (a pickle); it is not read.
    throw new Error(code === 'ENOENT' ? `there is no ${ADAPTER_WEIGHTS_FILE} in ${dir} (adapter_model.bin is not supported)` : (error as Error).message);
  }
  return { config, weights: new Uint8Array(weights.buffer, weights.byteOffset, weights.byteLength) };
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * The reader of run-time loads: `path` (relative to `root`, or absolute) must name a
 * folder inside `root` whose two files, symlinks resolved, are regular files inside it
 * too, and the config must be JSON. Every refusal is the same AdapterPathRefused, and the
 * files read are the resolved ones (not the link a client might swap after the check).
 */
export function confinedAdapterReader(root: string): AdapterReader {
  return async (path) => {
    let files: AdapterFiles;
    try {
      const realRoot = await realpath(root);
      const dir = await realpath(resolve(realRoot, path));
      if (!inside(realRoot, dir)) throw new AdapterPathRefused();
      const real = await Promise.all([ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE].map((file) => realpath(join(dir, file))));
      for (const file of real) if (!inside(realRoot, file) || !(await stat(file)).isFile()) throw new AdapterPathRefused();
      const [configText, weights] = await Promise.all([readFile(real[0]!, 'utf8'), readFile(real[1]!)]);
      files = { config: JSON.parse(configText), weights: new Uint8Array(weights.buffer, weights.byteOffset, weights.byteLength) };
    } catch {
      throw new AdapterPathRefused();
    }
    return files;
  };
}

/**
 * The engine's LoRA options from the server configuration, adapters read from disk;
 * undefined when adapters are off. loraModules (the operator's) are read as given;
 * run-time loads only inside loraRoot.
 */
export function nodeLoraOptions(config: ServerConfig): LoraOptions | undefined {
  if (config.loraRoot === null) {
    if (config.allowRuntimeLoraUpdating) throw new Error('allowRuntimeLoraUpdating needs loraRoot (LORA_ROOT): the folder run-time adapter loads are confined to.');
    return loraOptionsOf(config, readAdapterDir, async () => Promise.reject(new AdapterPathRefused()));
  }
  return loraOptionsOf(config, readAdapterDir, confinedAdapterReader(config.loraRoot));
}
