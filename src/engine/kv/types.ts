import type { Tensor } from '../../onnx/ort-runtime.js';

/*
 * The KV cache's shapes, at the bottom of its home (src/engine/kv/): the host arrays'
 * operations (kv-cache.ts), the GPU store (gpu-kv-cache.ts), the in-place store
 * (in-place-kv.ts, in-place-step.ts) and the worker thread's store
 * (../model-thread/remote-kv.ts) build on these, which name none of them: a cache points
 * at its store through KvStore.
 */

/**
 * A cache layer's elements: float32, or float16 bit patterns (fp16 / q4f16 exports), as
 * onnxruntime's JS packages hand them over. The cache only copies them, never reads them.
 */
export type KvArray = Float32Array | Uint16Array;
export type KvElementType = 'float32' | 'float16';

/**
 * Where each row's real slots sit when rows of different lengths share the cache:
 * - `end` (left padding, the default): a row's real slots are its last ones. Graphs that
 *   append new keys after the past (Concat) and mask by attention_mask want this.
 * - `start` (right padding): a row's real slots are its first ones. GroupQueryAttention
 *   wired with seqlens_k = ReduceSum(attention_mask) - 1 (onnxruntime-genai's builder)
 *   writes a row's new keys right after its own length, so it wants this.
 */
export type KvPadding = 'end' | 'start';

/**
 * A batch's key/value cache: for every layer, key and value tensors laid out as the
 * model's past_key_values inputs want them, [batch, kvHeads, length, headDim].
 *
 * Rows are aligned by the padding side (see KvPadding); padding is masked out with
 * attention_mask 0. Every decode step adds one slot to every row, so a step's `present`
 * outputs become the next step's past without any copy; rows are repacked only when the
 * batch's membership changes or a speculative step leaves rejected guesses behind.
 * Graphs with the in-place contract keep one cache instead, whose arrays have room for
 * more rows than `batch` and whose rows have free slots after their real ones (in-place-kv.ts).
 */
export interface KvCache {
  batch: number;
  /** Slots per row (padding included). */
  length: number;
  heads: number;
  headDim: number;
  keys: KvArray[];
  values: KvArray[];
  /**
   * The same data as runtime tensors, when the cache is a model step's `present` outputs:
   * fed back as the next step's past as they are, without wrapping the arrays again.
   */
  tensors?: { keys: Tensor[]; values: Tensor[] };
  /**
   * WebGPU: the cache lives in GPU buffers (gpu-kv-cache.ts) and `keys` / `values` are
   * empty. Repacking copies on the GPU; release it (releaseKvCache) once it is replaced.
   */
  gpu?: GpuKvTensors;
  /**
   * Worker mode: the cache lives in the model's worker thread (../model-thread/remote-kv.ts)
   * and `keys` / `values` are empty; repacking and releasing are messages to it.
   */
  remote?: RemoteKvHandle;
}

/**
 * Where a row of a new cache comes from: row `row` of `cache`, whose `realLength` slots
 * before slot `end` (default: the row's end) are real.
 */
export interface KvRowSource {
  cache: KvCache;
  row: number;
  realLength: number;
  /** Slots from here on are dropped (a speculative step's rejected guesses). */
  end?: number;
}

/**
 * A store that keeps caches outside JavaScript arrays (GPU buffers, a worker thread) and
 * repacks them there: repackKvCache hands a cache it holds back to it.
 */
export interface KvStore {
  repack(sources: readonly KvRowSource[], length: number, template: KvCache, padding: KvPadding): KvCache;
}

/** A cache's per-layer tensors on the GPU (gpu-kv-cache.ts); `release` frees them (idempotent). */
export interface GpuKvTensors {
  store: KvStore;
  keys: Tensor[];
  values: Tensor[];
  release(): void;
}

/** A cache kept in the model's worker thread: the main thread holds its id and shape only. */
export interface RemoteKvHandle {
  store: KvStore;
  id: number;
  /** Frees the worker's arrays (idempotent). */
  release(): void;
}
