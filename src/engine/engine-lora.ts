/**
 * The engine's LoRA side: the LoRA graph built from the served graph (adapters/lora-graph.ts),
 * attached to the decoder as its second session; the adapter slots; the adapters by name.
 */
import { buildLoraGraph } from '../adapters/lora-graph.js';
import { LoraRegistry, type AdapterReader, type LoraModuleSetting } from '../adapters/lora-registry.js';
import { LoraSlots } from '../adapters/lora-slots.js';
import { AdapterError } from '../adapters/peft-adapter.js';
import { SafetensorsError } from '../adapters/safetensors.js';
import { EngineRequestError } from './errors.js';
import type { ModelFiles } from '../onnx/model-files.js';
import type { ModelSpec } from '../onnx/model-spec.js';
import type { Decoder } from './onnx-decoder.js';
import type { InferenceSession } from '../onnx/ort-runtime.js';
import type { AdapterInfo, EngineAdapters } from './types.js';

export interface LoraOptions {
  /** Adapters one model call can mix (vLLM's max_loras). */
  maxLoras: number;
  /** Adapters held at once (vLLM's max_cpu_loras); a load past it is refused. Default: heldAdapterCap. */
  maxCpuLoras?: number;
  /** Largest adapter rank accepted (vLLM's max_lora_rank); every slot is this wide. */
  maxLoraRank: number;
  /** Loaded at startup; a failure stops the start. */
  modules: readonly LoraModuleSetting[];
  reader: AdapterReader;
  /** /v1/load_lora_adapter and /v1/unload_lora_adapter are allowed. */
  runtimeUpdates: boolean;
  /** What /v1/load_lora_adapter reads through (Node: confined to loraRoot); absent: `reader`. */
  runtimeReader?: AdapterReader;
}

export class EngineLora implements EngineAdapters {
  readonly notes: string[] = [];

  private constructor(
    readonly registry: LoraRegistry,
    readonly slots: LoraSlots,
    readonly runtimeUpdates: boolean,
    private readonly runtimeReader: AdapterReader | undefined,
  ) {}

  static async create(
    decoder: Decoder,
    files: ModelFiles,
    spec: ModelSpec,
    servedModelName: string,
    options: LoraOptions,
    sessionOptions: InferenceSession.SessionOptions | undefined,
    context: { nativeExternalData: boolean; label: string },
  ): Promise<EngineLora> {
    if (context.nativeExternalData) {
      throw new Error(
        `${context.label} cannot take LoRA adapters here: its weights are in external data files, and onnxruntime-node ` +
          'can only find those for a graph it opens by path, not for the LoRA graph built in memory.',
      );
    }
    const { model, layout } = buildLoraGraph(files.onnx, spec, {
      slots: options.maxLoras,
      rank: options.maxLoraRank,
      label: context.label,
    });
    const slots = new LoraSlots(layout);
    await decoder.attachLora(model, slots, sessionOptions);
    const registry = new LoraRegistry(layout, spec.numLayers, options.maxLoraRank, options.reader, new Set([servedModelName]), heldAdapterCap(options));
    const lora = new EngineLora(registry, slots, options.runtimeUpdates, options.runtimeReader);
    for (const { name, path } of options.modules) await lora.loadWith(name, path, options.reader);
    lora.notes.unshift(`LoRA: ${options.maxLoras} adapter slots of rank ${options.maxLoraRank} on ${[...layout.modules].join(', ')}`);
    return lora;
  }

  /** What to print at startup: the slots, then each adapter with its notes. */
  startupLines(): string[] {
    return [...this.notes, ...this.registry.list().map((adapter) => `LoRA adapter "${adapter.name}" (rank ${adapter.rank}, ${adapter.modules.length} modules) from ${adapter.path}`)];
  }

  list(): AdapterInfo[] {
    return this.registry.list().map(({ name, path }) => ({ name, path }));
  }

  has(name: string): boolean {
    return this.registry.get(name) !== undefined;
  }

  /** A run-time load (/v1/load_lora_adapter); rejects with an EngineRequestError (a 400) saying why the adapter cannot be served. */
  load(name: string, path: string): Promise<void> {
    return this.loadWith(name, path, this.runtimeReader);
  }

  private async loadWith(name: string, path: string, reader: AdapterReader | undefined): Promise<void> {
    try {
      const adapter = await this.registry.load(name, path, reader);
      this.notes.push(...adapter.notes);
    } catch (error) {
      if (error instanceof AdapterError || error instanceof SafetensorsError) throw new EngineRequestError(error.message);
      throw error;
    }
  }

  unload(name: string): boolean {
    return this.registry.unload(name) !== undefined;
  }
}

/** The server configuration's default (16), never below the slots or the adapters named at startup. */
function heldAdapterCap(options: LoraOptions): number {
  return Math.max(options.maxCpuLoras ?? 16, options.maxLoras, options.modules.length);
}
