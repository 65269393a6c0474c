/**
 * The embedding Worker's engine (`--env embeddings`): the model folder the build bundled
 * (scripts/build-worker-embeddings.ts: the graph as a Data module, the JSON files in one
 * JSON module) loaded on the isolate's first request by the same code as Node's
 * (embeddings/load.ts), on onnxruntime-web's WebAssembly backend. Before the session is
 * created the graph is checked against the isolate's memory (embedding-limits.ts), and
 * the tokens one model call may pad to are lowered to what the isolate can hold.
 */
import { schedulerLimitsOf } from '../../config/server-config.js';
import { formatBytes } from '../../engine/context-length.js';
import { embeddingContextOf, loadEmbeddingEngine, type EmbeddingModelFiles } from '../../embeddings/load.js';
import { embeddingServingOptions } from '../embedding-options.js';
import { refuseAnotherBundle } from './bundled-model.js';
import { embeddingShapeOf, planWorkerEmbedding } from './embedding-limits.js';
import { workerGgufLimitsFrom } from './gguf-limits.js';
import type { EngineFactory } from './handler.js';
import { workerOrt } from './ort.js';

/** What the build writes beside the graph (dist/worker-embeddings/model.json). */
export interface BundledEmbeddingInfo {
  /** The folder's name: the default served model name, as Node serves MODEL_DIR=…/name. */
  name: string;
  /** The graph's path inside the folder (onnx/model.onnx, onnx/model_quantized.onnx, ...). */
  onnxFile: string;
  files: Omit<EmbeddingModelFiles, 'onnx' | 'onnxFile'>;
}

export interface BundledEmbeddingModel extends BundledEmbeddingInfo {
  onnx: ArrayBuffer;
}

export function workerEmbeddingEngine(bundle: BundledEmbeddingModel): EngineFactory {
  return async (env, config) => {
    refuseAnotherBundle(env, 'EMBEDDING_MODEL', bundle.name, 'folder', 'embeddings');
    const files: EmbeddingModelFiles = { ...bundle.files, onnx: new Uint8Array(bundle.onnx), onnxFile: bundle.onnxFile };
    const limits = workerGgufLimitsFrom(env);
    const schedulerLimits = schedulerLimitsOf(config);
    let context: number;
    let plan;
    try {
      context = embeddingContextOf(files, config.maxSeqLen).maxModelLen;
      plan = planWorkerEmbedding(bundle.name, bundle.onnx.byteLength, embeddingShapeOf(files.config, context), schedulerLimits.maxBatchedTokens, limits);
    } catch (error) {
      throw new Error(`The embedding model cannot be served: ${(error as Error).message}`, { cause: error });
    }
    const engine = await loadEmbeddingEngine({
      ort: workerOrt(),
      files,
      ...embeddingServingOptions(config, plan.maxBatchedTokens),
      sessionOptions: { graphOptimizationLevel: 'all' },
    });
    const lowered = plan.maxBatchedTokens < schedulerLimits.maxBatchedTokens ? ` (maxBatchedTokens ${schedulerLimits.maxBatchedTokens} lowered to fit)` : '';
    const lines = [
      ...engine.notes,
      `Embedding model in the isolate: the graph ${formatBytes(plan.fileBytes)}, executed by onnxruntime-web (WebAssembly, one thread); about ${formatBytes(plan.peakBytes)} ` +
        `of the isolate's ${formatBytes(limits.memoryBytes)} at the peak; a model call pads to at most ${plan.maxBatchedTokens} tokens${lowered}.`,
    ];
    for (const line of lines) console.log(line);
    return { engine, embeddings: engine, sharedStepLoop: true };
  };
}
