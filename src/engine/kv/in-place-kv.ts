/**
 * The KV cache of graphs with the in-place contract (decoder-contract.ts, kvOutputs "new":
 * the converter's `inplace` flavour). The engine keeps one buffer per layer and kind,
 * [rows, kv_heads, slots, head_dim], with room to grow on both axes: the batch is the first
 * `batch` rows (a prefix, so onnxruntime reads it without a copy), and each row's real slots
 * are its first ones (right padding) followed by free slots. A step's graph reads the buffer
 * as past_key_values, masked to each row's real slots, and outputs only the fed tokens' keys
 * and values, which are written into each row's next free slots here.
 *
 * So a decode step copies no cache: the buffer is reallocated (and copied once) only when a
 * row needs more slots than it has, or the batch more rows, each time with a quarter more
 * room. Rows leaving or joining move only the rows concerned (compact, below).
 */
import { repackKvCache } from './kv-cache.js';
import type { KvArray, KvCache, KvRowSource } from './types.js';

/** Spans up to this many values are copied element by element (writeNewSlots). */
const SHORT_SPAN = 256;
/** Slot room is allocated in blocks of this many slots. */
const SLOT_BLOCK = 64;

/** Slots to allocate when rows need `needed`: a quarter more, whole blocks, at most the context (unless a row needs more). */
export function slotRoom(needed: number, contextLength: number): number {
  const roomy = Math.ceil((needed * 1.25) / SLOT_BLOCK) * SLOT_BLOCK;
  return Math.max(needed, Math.min(roomy, Math.max(contextLength, SLOT_BLOCK)));
}

/** Rows to allocate for a batch of `batch`: the next power of two. */
export function rowRoom(batch: number): number {
  let rows = 1;
  while (rows < batch) rows *= 2;
  return rows;
}

/** Rows the cache's buffers have room for (its batch is a prefix of them). */
export function rowCapacity(cache: KvCache): number {
  const rowStride = cache.heads * cache.length * cache.headDim;
  return rowStride === 0 ? 0 : Math.floor(cache.keys[0].length / rowStride);
}

/**
 * attention_mask of an in-place step for one row: [T cached slots | S fed tokens]; the row's
 * first `cached` slots and every fed token are real.
 */
export function markInPlaceSlots(mask: BigInt64Array, row: number, cacheLength: number, cached: number, seqLen: number): void {
  const start = row * (cacheLength + seqLen);
  mask.fill(1n, start, start + cached);
  mask.fill(1n, start + cacheLength, start + cacheLength + seqLen);
}

/**
 * Writes the fed tokens' keys and values ([batch, heads, S, headDim] per layer, the graph's
 * new_key_values outputs) into each row's slots from `cacheLengths[row]` on.
 */
export function writeNewSlots(
  cache: KvCache,
  newKeys: readonly KvArray[],
  newValues: readonly KvArray[],
  cacheLengths: ArrayLike<number>,
  seqLen: number,
): void {
  const { batch, heads, headDim, length } = cache;
  for (let row = 0; row < batch; row++) {
    if (cacheLengths[row] + seqLen > length) {
      throw new Error(`in-place KV cache: row ${row} has ${cacheLengths[row]} of ${length} slots, no room for ${seqLen} more`);
    }
  }
  const span = seqLen * headDim;
  for (let layer = 0; layer < newKeys.length; layer++) {
    const key = cache.keys[layer];
    const value = cache.values[layer];
    const fedKeys = newKeys[layer];
    const fedValues = newValues[layer];
    for (let row = 0; row < batch; row++) {
      for (let head = 0; head < heads; head++) {
        const source = (row * heads + head) * span;
        const target = ((row * heads + head) * length + cacheLengths[row]) * headDim;
        if (span <= SHORT_SPAN) {
          // A decode step's span is one head's slot (8 to 128 values): a loop beats making views to set().
          for (let i = 0; i < span; i++) {
            key[target + i] = fedKeys[source + i];
            value[target + i] = fedValues[source + i];
          }
        } else {
          key.set(fedKeys.subarray(source, source + span), target);
          value.set(fedValues.subarray(source, source + span), target);
        }
      }
    }
  }
}

/**
 * The Hugging Face semantics for callers that keep no room (a prefill, the batching
 * self-test): a new cache of past.length + S slots, each row's past slots then its fed ones,
 * exactly the virtual sequence the step's attention_mask described.
 */
export function appendNewSlots(past: KvCache, newKeys: readonly KvArray[], newValues: readonly KvArray[], seqLen: number): KvCache {
  const { batch, heads, headDim } = past;
  const length = past.length + seqLen;
  if (past.length === 0) return { batch, length, heads, headDim, keys: [...newKeys], values: [...newValues] };
  const join = (old: KvArray, fed: KvArray): KvArray => {
    const joined = old instanceof Uint16Array ? new Uint16Array(batch * heads * length * headDim) : new Float32Array(batch * heads * length * headDim);
    for (let rowHead = 0; rowHead < batch * heads; rowHead++) {
      joined.set(old.subarray(rowHead * past.length * headDim, (rowHead + 1) * past.length * headDim), rowHead * length * headDim);
      joined.set(fed.subarray(rowHead * seqLen * headDim, (rowHead + 1) * seqLen * headDim), (rowHead * length + past.length) * headDim);
    }
    return joined;
  };
  return {
    batch,
    length,
    heads,
    headDim,
    keys: newKeys.map((fed, layer) => join(past.keys[layer], fed)),
    values: newValues.map((fed, layer) => join(past.values[layer], fed)),
  };
}

/**
 * The batch's new rows, in order (rows staying, forks, rows joining; each source's real
 * slots are its first `realLength`), with room for `needed` slots per row. In place when
 * the buffers have room and no row would be overwritten before it is read (rows staying
 * only move towards the front: a row leaving costs moving the rows after it, a row joining
 * costs copying its prompt's slots); otherwise into new buffers with room to grow, also
 * when the rows left need less than half the slots (attention runs over every slot).
 */
export function compactInPlace(sources: readonly KvRowSource[], current: KvCache, needed: number, contextLength: number): KvCache {
  const batch = sources.length;
  const fitsInPlace =
    current.length > 0 &&
    needed <= current.length &&
    !(current.length > SLOT_BLOCK && slotRoom(needed, contextLength) * 2 <= current.length) &&
    batch <= rowCapacity(current) &&
    sources.every((source, target) => source.cache !== current || source.row >= target) &&
    sources.every((source, target) => source.cache !== current || target === 0 || sourcesRow(sources, current, target) < source.row);
  if (!fitsInPlace) {
    const length = slotRoom(needed, contextLength);
    const cache = repackKvCache(sources, length, current, 'start', rowRoom(batch));
    return { ...cache, batch };
  }
  const { heads, headDim, length } = current;
  for (let layer = 0; layer < current.keys.length; layer++) {
    const key = current.keys[layer];
    const value = current.values[layer];
    sources.forEach((source, target) => {
      if (source.cache === current && source.row === target) return;
      const span = source.realLength * headDim;
      for (let head = 0; head < heads; head++) {
        const to = (target * heads + head) * length * headDim;
        const from = (source.row * heads + head) * source.cache.length * headDim;
        if (source.cache === current) {
          key.copyWithin(to, from, from + span);
          value.copyWithin(to, from, from + span);
        } else {
          key.set(source.cache.keys[layer].subarray(from, from + span), to);
          value.set(source.cache.values[layer].subarray(from, from + span), to);
        }
      }
    });
  }
  return { batch, length, heads, headDim, keys: current.keys, values: current.values };
}

/** The row of the latest source before `target` that reads `current` (-1: none). */
function sourcesRow(sources: readonly KvRowSource[], current: KvCache, target: number): number {
  for (let index = target - 1; index >= 0; index--) if (sources[index].cache === current) return sources[index].row;
  return -1;
}
