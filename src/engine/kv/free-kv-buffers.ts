/**
 * Gives a replaced KV cache's memory back now rather than at V8's next full collection.
 *
 * An in-place cache (in-place-kv.ts) lives for many steps, so its arrays are in V8's old
 * generation by the time the batch outgrows them; V8 collects old-generation garbage only
 * when the heap grows or when ~64 MiB of array memory has piled up since the last full
 * collection. On the embedded model a round of 64 streams outgrows its buffers ~40 times
 * (rows in powers of two, slots by a quarter), so the dead buffers were most of the
 * server's peak RSS. Transferring an array's buffer detaches it: the memory moves to a new,
 * unreferenced buffer in the young generation, which the next minor collection (every few
 * steps) frees.
 *
 * Only for arrays nothing else reads: a detached array has length 0.
 */
import type { KvArray, KvCache } from './types.js';

/** Frees the arrays of `replaced` that `kept` does not share (compactInPlace may return the same arrays in a new cache). */
export function freeReplacedKvBuffers(replaced: KvCache, kept: KvCache): void {
  if (replaced === kept || replaced.gpu || replaced.remote) return;
  const keep = new Set<ArrayBufferLike>();
  for (const array of kept.keys) keep.add(array.buffer);
  for (const array of kept.values) keep.add(array.buffer);
  for (const array of replaced.keys) freeArray(array, keep);
  for (const array of replaced.values) freeArray(array, keep);
}

function freeArray(array: KvArray, keep: ReadonlySet<ArrayBufferLike>): void {
  const { buffer } = array;
  // A view into a larger buffer (another array may read the rest) or shared memory stays.
  if (keep.has(buffer) || array.byteLength === 0 || array.byteOffset !== 0 || array.byteLength !== buffer.byteLength) return;
  if (!(buffer instanceof ArrayBuffer)) return;
  try {
    structuredClone(buffer, { transfer: [buffer] });
  } catch {
    // Not transferable here (a runtime's own memory): the collector frees it as before.
  }
}
