import { basename, resolve } from 'node:path';
import { LocalEngine } from '../engine/local-engine.js';
import type { OrtRuntime } from '../engine/ort-runtime.js';
import type { SchedulerLimits } from '../engine/scheduler-limits.js';
import type { ModelDtype } from '../engine/model-variants.js';
import { readModelDir } from './model-dir.js';
import type { LoraOptions } from '../engine/engine-lora.js';

export interface NodeEngineOptions {
  modelDir: string;
  /** Defaults to the model directory's name. */
  servedModelName?: string;
  /**
   * "native" (default): onnxruntime-node, the fastest here. "wasm": onnxruntime-web's
   * WebAssembly backend, the one workerd and browsers run, useful to check parity.
   */
  backend?: 'native' | 'wasm';
  /** Threads per model call; one is fastest for small models on a shared machine. */
  threads?: number;
  limits?: Partial<SchedulerLimits>;
  /** Which variant of the model folder to load (see engine/model-variants.ts). */
  dtype?: ModelDtype;
  modelFile?: string;
  /** LoRA adapters (see runtime/node-adapters.ts nodeLoraOptions). */
  lora?: LoraOptions;
}

async function loadOrt(backend: 'native' | 'wasm', threads: number): Promise<OrtRuntime> {
  if (backend === 'native') return (await import('onnxruntime-node')) as unknown as OrtRuntime;
  const ort = await import('onnxruntime-web');
  ort.env.wasm.numThreads = threads;
  return ort as unknown as OrtRuntime;
}

/** The local onnxruntime engine on a model directory, for Node. */
export async function createNodeEngine(options: NodeEngineOptions): Promise<LocalEngine> {
  const backend = options.backend ?? 'native';
  const threads = options.threads ?? 1;
  const modelDir = resolve(options.modelDir);
  // onnxruntime-node opens the graph by path, so its external data resolves beside it;
  // onnxruntime-web has no file system and takes the data files' bytes.
  const [ort, files] = await Promise.all([
    loadOrt(backend, threads),
    readModelDir(modelDir, { dtype: options.dtype, modelFile: options.modelFile, readExternalData: backend === 'wasm' }),
  ]);
  return LocalEngine.create({
    ort,
    files,
    servedModelName: options.servedModelName ?? basename(modelDir),
    loadFromPath: backend === 'native',
    sessionOptions:
      backend === 'native'
        ? { intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential' }
        : { graphOptimizationLevel: 'all' },
    limits: options.limits,
    lora: options.lora,
  });
}
