import type { KvArray, KvCache, KvElementType, KvPadding, KvRowSource } from './types.js';

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
    return gpuStore.repack(sources, length, template, padding);
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
