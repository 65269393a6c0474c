/**
 * Scratch buffers shared by every sampler in this JS realm. Sampling is synchronous and
 * never re-entrant, so one buffer per purpose suffices however many sequences run; this
 * keeps vocabulary-sized allocations out of both the per-step path and the per-sequence
 * setup. A buffer only grows (to the largest vocabulary seen).
 */
export type ScratchSlot = 'select' | 'weights' | 'work' | 'raw';

const float64: Partial<Record<ScratchSlot, Float64Array>> = {};
const float32: Partial<Record<ScratchSlot, Float32Array>> = {};

/** A Float64Array of at least `length` elements; contents are garbage. */
export function scratchFloat64(slot: ScratchSlot, length: number): Float64Array {
  let buffer = float64[slot];
  if (buffer === undefined || buffer.length < length) {
    buffer = new Float64Array(length);
    float64[slot] = buffer;
  }
  return buffer;
}

/** A Float32Array of at least `length` elements; contents are garbage. */
export function scratchFloat32(slot: ScratchSlot, length: number): Float32Array {
  let buffer = float32[slot];
  if (buffer === undefined || buffer.length < length) {
    buffer = new Float32Array(length);
    float32[slot] = buffer;
  }
  return buffer;
}
