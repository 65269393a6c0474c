/** The engine's LoRA options from the server configuration, for every home; each brings its adapter reader. */
import type { AdapterReader } from '../adapters/lora-registry.js';
import { loraEnabled, type ServerConfig } from '../config/server-config.js';
import type { LoraOptions } from '../engine/engine-lora.js';

/** Undefined when adapters are off (none configured, no run-time loading): the plain graph only. */
export function loraOptionsOf(config: ServerConfig, reader: AdapterReader, runtimeReader?: AdapterReader): LoraOptions | undefined {
  if (!loraEnabled(config)) return undefined;
  return {
    maxLoras: config.maxLoras,
    maxCpuLoras: config.maxCpuLoras,
    maxLoraRank: config.maxLoraRank,
    modules: config.loraModules,
    reader,
    runtimeUpdates: config.allowRuntimeLoraUpdating,
    runtimeReader,
  };
}
