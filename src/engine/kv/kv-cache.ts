import type { GpuKvTensors } from './gpu-kv-cache.js';
import type { RemoteKvHandle } from './model-thread/remote-kv.js';
import type { Tensor } from './ort-runtime.js';

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
   * Worker mode: the cache lives in the model's worker thread (model-thread/remote-kv.ts)
   * and `keys` / `values` are empty; repacking and releasing are messages to it.
   */
  remote?: RemoteKvHandle;
}

/** Frees a replaced cache's GPU buffers; nothing to do for a cache in JavaScript arrays. */
export function releaseKvCache(cache: KvCache): void {
  cache.gpu?.release();
  cache.remote?.release();
}

export function emptyKvCache(
  numLayers: number,
  batch: number,
  heads: number,
  headDim: number,
  elementType: KvElementType = 'float32',
): KvCache {
  const empty = () => (elementType === 'float16' ? new Uint16Array(0) : new Float32Array(0));
  return {
    batch,
    length: 0,
    heads,
    headDim,
    keys: Array.from({ length: numLayers }, empty),
    values: Array.from({ length: numLayers }, empty),
  };
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
 * Builds a new cache from rows of existing ones (rows leaving, rows joining), each row's
 * real slots aligned to `padding`'s side of `length` slots (sources are read the same
 * way). Padding slots are zero. The element type is the template's.
 */
export function repackKvCache(
  sources: readonly KvRowSource[],
  length: number,
  template: KvCache,
  padding: KvPadding = 'end',
  /** Rows to allocate (at least the sources'): the in-place store keeps room to grow (in-place-kv.ts). */
  rows = sources.length,
): KvCache {
  const remoteStore = (template.remote ?? sources.find((source) => source.cache.remote)?.cache.remote)?.store;
  if (remoteStore) return remoteStore.repack(sources, length, template, padding);
  const gpuStore = (template.gpu ?? sources.find((source) => source.cache.gpu)?.cache.gpu)?.store;
  if (gpuStore) {
    // The GPU store copies rows right-aligned only; LocalEngine keeps GPU caches to such graphs.
    if (padding !== 'end') throw new Error('A GPU-resident KV cache takes left-padded (end-aligned) rows only.');
    return gpuStore.repack(sources, length, template);
  }
  const { heads, headDim } = template;
  const numLayers = template.keys.length;
  const batch = sources.length;
  const rowStride = heads * length * headDim;
  const allocatedRows = Math.max(rows, batch);
  const allocate = (size: number): KvArray =>
    template.keys[0] instanceof Uint16Array ? new Uint16Array(size) : new Float32Array(size);
  const keys: KvArray[] = [];
  const values: KvArray[] = [];
  for (let layer = 0; layer < numLayers; layer++) {
    const key = allocate(allocatedRows * rowStride);
    const value = allocate(allocatedRows * rowStride);
    sources.forEach((source, targetRow) => {
      copyRow(source, layer, key, value, targetRow, length, heads, headDim, padding);
    });
    keys.push(key);
    values.push(value);
  }
  return { batch, length, heads, headDim, keys, values };
}

function copyRow(
  source: KvRowSource,
  layer: number,
  key: KvArray,
  value: KvArray,
  targetRow: number,
  targetLength: number,
  heads: number,
  headDim: number,
  padding: KvPadding,
): void {
  const { cache, row, realLength } = source;
  const end = source.end ?? (padding === 'end' ? cache.length : realLength);
  if (realLength > targetLength) throw new Error(`kv row of ${realLength} slots does not fit in ${targetLength}`);
  const sourceKeys = cache.keys[layer];
  const sourceValues = cache.values[layer];
  const span = realLength * headDim;
  for (let head = 0; head < heads; head++) {
    const sourceStart = ((row * heads + head) * cache.length + (end - realLength)) * headDim;
    const targetOffset = padding === 'end' ? targetLength - realLength : 0;
    const targetStart = ((targetRow * heads + head) * targetLength + targetOffset) * headDim;
    key.set(sourceKeys.subarray(sourceStart, sourceStart + span), targetStart);
    value.set(sourceValues.subarray(sourceStart, sourceStart + span), targetStart);
  }
}

/**
 * Sets row `row`'s attention_mask to 1 over its `realSlots` slots (cached + new) of
 * `total`, on the padding side's end of the row.
 */
export function markRealSlots(mask: BigInt64Array, row: number, total: number, realSlots: number, padding: KvPadding): void {
  if (padding === 'end') mask.fill(1n, row * total + (total - realSlots), (row + 1) * total);
  else mask.fill(1n, row * total, row * total + realSlots);
}
