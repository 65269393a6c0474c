/** Reads PEFT adapter folders from disk for the engine (engine/engine-lora.ts). */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { LoraOptions } from '../engine/engine-lora.js';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, type AdapterFiles } from '../adapters/peft-adapter.js';
import type { ServerConfig } from '../config/server-config.js';
import { loraOptionsOf } from './lora-options.js';

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

/** The engine's LoRA options from the server configuration, adapters read from disk; undefined when adapters are off. */
export function nodeLoraOptions(config: ServerConfig): LoraOptions | undefined {
  return loraOptionsOf(config, readAdapterDir);
}
