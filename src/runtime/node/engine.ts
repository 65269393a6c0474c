import { availableParallelism } from 'node:os';
import { basename, resolve } from 'node:path';
import { LocalEngine } from '../../engine/local-engine.js';
import { WorkerDecoder } from '../../engine/model-thread/worker-decoder.js';
import { loadOnnxruntimeNode } from '../../onnx/ort-native.js';
import type { OrtRuntime } from '../../onnx/ort-runtime.js';
import type { SchedulerLimits } from '../../engine/scheduler-limits.js';
import type { ModelDtype } from '../../engine/loading/model-variants.js';
import { readModelDir } from './model-dir.js';
import { createNodeTokenizerThread } from '../../tokenizer/node-tokenizer-thread.js';
import type { TokenizerThreadSettings } from '../../tokenizer/tokenizer-thread.js';
import { ggufModelFolder, isGgufPath } from '../../gguf/node-gguf.js';
import type { LoraOptions } from '../../engine/engine-lora.js';
import { DEFAULT_PIPELINE, type PipelineSettings } from '../../engine/model-thread/lanes.js';
import { INTRA_OP_SPINNING, planThreads, type ModelThreadSetting, type ThreadCountSetting } from '../../engine/model-thread/thread-plan.js';

/**
 * Spinning threads pick up the next kernel's work without a futex wake (a q4 decode step of
 * the 135M model hands off ~100 times); `force_spinning_stop` ends the spin when the call
 * returns, so an idle server, or one sampling between steps, burns no core on it.
 */
const SPIN_WITHIN_A_CALL = { force_spinning_stop: '1' } as const;
const NO_SPINNING = { intra_op: { allow_spinning: '0' } } as const;
/**
 * onnxruntime's parallel loops hand out shrinking blocks of work from this base, so the thread
 * that finishes first takes more of the rest instead of waiting at the loop's end. Measured
 * (135M q4, 2 threads spinning, quiet, two runs, interleaved): one request +5%, 8 streams
 * +4–14%, server CPU a token −4–8%. Only how work is split changes, not what is computed.
 */
const BALANCED_PARALLEL_LOOPS = { dynamic_block_base: '4' } as const;

export interface NodeEngineOptions {
  modelDir: string;
  /** Defaults to the model directory's name. */
  servedModelName?: string;
  /**
   * "native" (default): onnxruntime-node, the fastest here. "wasm": onnxruntime-web's
   * WebAssembly backend, the one workerd and browsers run, useful to check parity.
   */
  backend?: 'native' | 'wasm';
  /**
   * onnxruntime's intra-op threads per model call; "auto" (default): one for small models,
   * the cores (shared by `processes`) for large ones (engine/model-thread/thread-plan.ts).
   * The wasm backend takes it as its thread count.
   */
  intraOpNumThreads?: ThreadCountSetting;
  /** Intra-op threads spin between the kernels of a model call (native, above one thread; default INTRA_OP_SPINNING: on). */
  intraOpSpinning?: boolean;
  /** Which thread makes the model calls: "main", "worker" (native only) or "auto" (default: by model size). */
  modelThread?: ModelThreadSetting;
  /** Engine processes sharing this machine's cores (dataParallelSize), for the automatic thread count. */
  processes?: number;
  limits?: Partial<SchedulerLimits>;
  /** Which variant of the model folder to load (see engine/loading/model-variants.ts). */
  dtype?: ModelDtype;
  modelFile?: string;
  /** LoRA adapters (see runtime/node/adapters.ts nodeLoraOptions). */
  lora?: LoraOptions;
  /** Worker mode: overlapped lanes (engine/model-thread/lanes.ts); default DEFAULT_PIPELINE. */
  pipeline?: PipelineSettings;
  /** Told each stage of the load as it starts ("reading ...", "building ...", "creating the session ..."), for a start-up a user can follow. */
  onProgress?: (stage: string) => void;
  /**
   * Tokenize text with long unbroken pieces on a thread (tokenizer/node-tokenizer-thread.ts;
   * started by the first such text), with its queue bounds and deadline (defaults without).
   */
  tokenizerThread?: boolean | TokenizerThreadSettings;
}

async function loadOrt(backend: 'native' | 'wasm', threads: number): Promise<OrtRuntime> {
  if (backend === 'native') return loadOnnxruntimeNode();
  const ort = await import('onnxruntime-web');
  ort.env.wasm.numThreads = threads;
  return ort as unknown as OrtRuntime;
}

/** The local onnxruntime engine on a model directory, for Node. */
export async function createNodeEngine(options: NodeEngineOptions): Promise<LocalEngine> {
  const backend = options.backend ?? 'native';
  if (backend === 'wasm' && options.modelThread === 'worker') {
    throw new Error('modelThread "worker" needs the native backend (onnxruntime-node); the wasm backend runs on the main thread.');
  }
  // A .gguf (MODEL_DIR naming the file, or MODEL_FILE inside MODEL_DIR) becomes a model folder first (gguf/node-gguf.ts).
  const ggufPath = isGgufPath(options.modelDir) ? options.modelDir : isGgufPath(options.modelFile) ? resolve(options.modelDir, options.modelFile) : undefined;
  const progress = options.onProgress ?? (() => {});
  if (ggufPath !== undefined) progress(`reading ${ggufPath} and building its ONNX graph (kept in a cache for the next start)`);
  const gguf = ggufPath === undefined ? undefined : await ggufModelFolder(ggufPath);
  const modelDir = gguf?.dir ?? resolve(options.modelDir);
  // onnxruntime-node opens the graph by path, so its external data resolves beside it;
  // onnxruntime-web has no file system and takes the data files' bytes.
  // The same holds for an inline graph's weights: JS keeps only the graph's structure
  // (a second copy of a fp32 135M model's weights was a third of its peak RSS), unless
  // LoRA rebuilds the graph from its bytes.
  const fileSettings = {
    dtype: options.dtype,
    modelFile: gguf ? undefined : options.modelFile,
    readExternalData: backend === 'wasm',
    graphStructureOnly: backend === 'native' && options.lora === undefined,
  };
  progress(`reading the model files in ${modelDir}`);
  const files = await readModelDir(modelDir, fileSettings);
  const plan = planThreads(
    { intraOpNumThreads: options.intraOpNumThreads, modelThread: options.modelThread },
    { weightBytes: files.weightBytes ?? files.onnx.byteLength, cores: availableParallelism(), processes: options.processes, backend },
  );
  const ort = await loadOrt(backend, plan.intraOpNumThreads);
  const spinning = options.intraOpSpinning ?? INTRA_OP_SPINNING;
  const tokenizerThread = options.tokenizerThread === true ? {} : options.tokenizerThread || undefined;
  if (backend === 'native' && plan.intraOpNumThreads > 1) plan.reasons.push(spinning ? 'spinning between kernels within a model call (intraOpSpinning)' : 'no spinning between kernels (intraOpSpinning off)');
  const create = (modelThread: typeof plan.modelThread, reasons: string[]) => LocalEngine.create({
    ort,
    files,
    servedModelName: options.servedModelName ?? basename(ggufPath ?? modelDir),
    loadFromPath: backend === 'native',
    sessionOptions:
      backend === 'native'
        ? {
            intraOpNumThreads: plan.intraOpNumThreads,
            interOpNumThreads: 1,
            graphOptimizationLevel: 'all',
            executionMode: 'sequential',
            ...(plan.intraOpNumThreads > 1 ? { extra: { session: { ...(spinning ? SPIN_WITHIN_A_CALL : NO_SPINNING), ...BALANCED_PARALLEL_LOOPS } } } : {}),
          }
        : { graphOptimizationLevel: 'all' },
    limits: options.limits,
    lora: options.lora,
    modelThread,
    startWorkerDecoder: (start) => WorkerDecoder.create(start),
    pipeline: options.pipeline ?? DEFAULT_PIPELINE,
    threads: reasons.join('; '),
    startTokenizerThread: tokenizerThread === undefined ? undefined : (source) => createNodeTokenizerThread(source, tokenizerThread),
  });
  const mib = ((files.weightBytes ?? files.onnx.byteLength) / 2 ** 20).toFixed(1);
  progress(`creating the onnxruntime session for ${files.onnxFile} (${mib} MiB of weights), then a self-test pass`);
  const engine = await create(plan.modelThread, plan.reasons);
  if (gguf) engine.loadReport.notes.unshift(...gguf.notes);
  return engine;
}
