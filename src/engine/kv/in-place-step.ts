/**
 * The two operations a batch makes on an in-place KV cache (in-place-kv.ts), behind one
 * interface so the cache can live in this thread or in the model's worker thread
 * (model-thread/remote-kv.ts: the same operations as messages, run there by this code).
 */
import type { KvCache, KvRowSource } from './types.js';
import { compactInPlace, markInPlaceSlots } from './in-place-kv.js';

export interface InPlaceStepLayout {
  /** The cache the step reads and writes (grown when a row needed more room). */
  past: KvCache;
  /**
   * [batch, past.length + seqLen]; empty when the cache lives in the model's worker, which
   * builds the mask itself from `cacheLengths` (this thread does not know its slot count).
   */
  attentionMask: BigInt64Array;
  /** Each row's real slots in `past`. */
  cacheLengths: Int32Array;
}

export interface InPlaceKvOps {
  /** compactInPlace: the batch's new rows, in order, with room for `needed` slots per row. */
  compact(sources: readonly KvRowSource[], current: KvCache, needed: number): KvCache;
  /** A step feeding `seqLen` tokens per row to rows holding `cacheLengths` slots each. */
  layout(cache: KvCache, cacheLengths: Int32Array, seqLen: number): InPlaceStepLayout;
}

/** The operations on a cache held in this thread's arrays. */
export function localInPlaceKv(contextLength: number): InPlaceKvOps {
  return {
    compact: (sources, current, needed) => compactInPlace(sources, current, needed, contextLength),
    layout(cache, cacheLengths, seqLen) {
      const batch = cacheLengths.length;
      let needed = 0;
      for (let row = 0; row < batch; row++) needed = Math.max(needed, cacheLengths[row] + seqLen);
      let past = cache;
      if (needed > past.length) {
        const sources = Array.from(cacheLengths, (realLength, row) => ({ cache: past, row, realLength }));
        past = compactInPlace(sources, past, needed, contextLength);
      }
      const attentionMask = new BigInt64Array(batch * (past.length + seqLen));
      for (let row = 0; row < batch; row++) markInPlaceSlots(attentionMask, row, past.length, cacheLengths[row], seqLen);
      return { past, attentionMask, cacheLengths };
    },
  };
}
