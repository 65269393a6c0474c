import type { GpuKvTensors } from './gpu-kv-cache.js';
import type { Tensor } from './ort-runtime.js';

/**
 * A batch's key/value cache: for every layer, key and value tensors laid out as the
 * model's past_key_values inputs want them, [batch, kvHeads, length, headDim], float32.
 *
 * Rows are right-aligned: each row's real positions are its last `rowLengths[b]` slots
 * and anything before them is padding (masked out with attention_mask 0). Every decode
 * step appends one slot to every row, so a step's `present` outputs become the next
 * step's past without any copy; rows are repacked only when the batch's membership
 * changes or a speculative step leaves rejected guesses at the rows' ends.
 */
export interface KvCache {
  batch: number;
  /** Slots per row (padding included). */
  length: number;
  heads: number;
  headDim: number;
  keys: Float32Array[];
  values: Float32Array[];
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
}

/** Frees a replaced cache's GPU buffers; nothing to do for a cache in JavaScript arrays. */
export function releaseKvCache(cache: KvCache): void {
  cache.gpu?.release();
}

export function emptyKvCache(numLayers: number, batch: number, heads: number, headDim: number): KvCache {
  return {
    batch,
    length: 0,
    heads,
    headDim,
    keys: Array.from({ length: numLayers }, () => new Float32Array(0)),
    values: Array.from({ length: numLayers }, () => new Float32Array(0)),
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
 * real slots right-aligned in `length` slots. Padding slots are zero.
 */
export function repackKvCache(sources: readonly KvRowSource[], length: number, template: KvCache): KvCache {
  const gpuStore = (template.gpu ?? sources.find((source) => source.cache.gpu)?.cache.gpu)?.store;
  if (gpuStore) return gpuStore.repack(sources, length, template);
  const { heads, headDim } = template;
  const numLayers = template.keys.length;
  const batch = sources.length;
  const rowStride = heads * length * headDim;
  const keys: Float32Array[] = [];
  const values: Float32Array[] = [];
  for (let layer = 0; layer < numLayers; layer++) {
    const key = new Float32Array(batch * rowStride);
    const value = new Float32Array(batch * rowStride);
    sources.forEach((source, targetRow) => {
      copyRow(source, layer, key, value, targetRow, length, heads, headDim);
    });
    keys.push(key);
    values.push(value);
  }
  return { batch, length, heads, headDim, keys, values };
}

function copyRow(
  source: KvRowSource,
  layer: number,
  key: Float32Array,
  value: Float32Array,
  targetRow: number,
  targetLength: number,
  heads: number,
  headDim: number,
): void {
  const { cache, row, realLength } = source;
  const end = source.end ?? cache.length;
  if (realLength > targetLength) throw new Error(`kv row of ${realLength} slots does not fit in ${targetLength}`);
  const sourceKeys = cache.keys[layer];
  const sourceValues = cache.values[layer];
  const span = realLength * headDim;
  for (let head = 0; head < heads; head++) {
    const sourceStart = ((row * heads + head) * cache.length + (end - realLength)) * headDim;
    const targetStart = ((targetRow * heads + head) * targetLength + (targetLength - realLength)) * headDim;
    key.set(sourceKeys.subarray(sourceStart, sourceStart + span), targetStart);
    value.set(sourceValues.subarray(sourceStart, sourceStart + span), targetStart);
  }
}
