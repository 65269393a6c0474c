/**
 * Messages between the engine (main thread) and the model's worker thread
 * (decoder-worker.ts). The worker handles them strictly in order, so the main thread
 * never waits for a repack or a release: it names the new cache itself (ids are the main
 * thread's), and the next run that reads it comes after it in the queue.
 */
import type { InferenceSession } from '../../onnx/ort-runtime.js';
import type { KvPadding } from '../kv/types.js';
import type { ModelSpec } from '../../onnx/model-spec.js';
import type { DecoderContract } from '../loading/decoder-contract.js';
import type { LoraGraphLayout } from '../../adapters/lora-graph.js';
import type { PlaceholderEmbeds } from '../../onnx/placeholder-embeds.js';

/** Cache id 0: an empty cache (no slots), which needs no storage on either side. */
export const EMPTY_CACHE = 0;

export interface WorkerStart {
  /** A path (onnxruntime-node opens it, external data beside it) or the graph's bytes. */
  model: Uint8Array | string;
  spec: ModelSpec;
  sessionOptions: InferenceSession.SessionOptions;
  graphLabel: string;
  /** The model folder's embed_tokens graph ("embeds" decoders), with its session options. */
  embedTokens: { model: Uint8Array | string; file: string; sessionOptions: InferenceSession.SessionOptions } | null;
}

export interface WireRowSource {
  id: number;
  row: number;
  realLength: number;
  end?: number;
}

export interface WireRunInput {
  batch: number;
  seqLen: number;
  inputIds: BigInt64Array;
  positionIds: BigInt64Array;
  attentionMask: BigInt64Array;
  logitsToKeep?: number;
  placeholders?: readonly PlaceholderEmbeds[];
  loraSlots?: number[];
  /**
   * In-place graphs: each row's real slots. The worker then makes the step's layout itself
   * (kv/in-place-step.ts: room for the fed tokens, the mask; `attentionMask` is empty).
   */
  cacheLengths?: Int32Array;
  /** The past's id, and its shape (an empty past has no storage, only a shape). */
  past: { id: number; batch: number; length: number; heads: number; headDim: number };
}

export type ToWorker =
  | { type: 'run'; call: number; input: WireRunInput; present: number }
  | { type: 'repack'; target: number; sources: WireRowSource[]; length: number; heads: number; headDim: number; padding: KvPadding }
  /** compactInPlace (in-place graphs) of the sources into `target`; `current` is the batch's cache so far. */
  | { type: 'compact'; target: number; current: number; sources: WireRowSource[]; needed: number; heads: number; headDim: number }
  | { type: 'release'; id: number }
  | { type: 'attachLora'; call: number; model: Uint8Array; layout: LoraGraphLayout; sessionOptions: InferenceSession.SessionOptions }
  /** The main thread's adapter tables changed (a slot was loaded): the worker's copy follows before the next run. */
  | { type: 'loraTables'; a: Float32Array; b: Float32Array }
  | { type: 'dispose'; call: number };

export interface WireError {
  message: string;
  /** An EngineRequestError: the request's fault (a 4xx), not the model's. */
  requestError: boolean;
}

export type FromWorker =
  | { type: 'ready'; contract: DecoderContract }
  | { type: 'startFailed'; error: WireError }
  | { type: 'ran'; call: number; logits: Float32Array; presentLength: number; embeddingSize: number | null; computeMs: number }
  | { type: 'done'; call: number }
  | { type: 'failed'; call: number; error: WireError };
