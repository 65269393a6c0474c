import { describe, expect, it } from 'vitest';
import { repackKvCache, type KvCache } from '../../src/engine/kv-cache.js';

/** A cache whose every element encodes (layer, row, head, slot, dim) so copies can be traced. */
function tracedCache(batch: number, length: number, heads = 2, headDim = 3, layers = 2): KvCache {
  const make = (layer: number, kind: number) => {
    const data = new Float32Array(batch * heads * length * headDim);
    for (let b = 0; b < batch; b++)
      for (let h = 0; h < heads; h++)
        for (let s = 0; s < length; s++)
          for (let d = 0; d < headDim; d++)
            data[((b * heads + h) * length + s) * headDim + d] = kind * 1e5 + layer * 1e4 + b * 1e3 + h * 100 + s * 10 + d;
    return data;
  };
  return {
    batch,
    length,
    heads,
    headDim,
    keys: Array.from({ length: layers }, (_, l) => make(l, 1)),
    values: Array.from({ length: layers }, (_, l) => make(l, 2)),
  };
}

function at(cache: KvCache, layer: number, row: number, head: number, slot: number, dim: number, kind: 'k' | 'v') {
  const data = kind === 'k' ? cache.keys[layer] : cache.values[layer];
  return data[((row * cache.heads + head) * cache.length + slot) * cache.headDim + dim];
}

describe('repackKvCache', () => {
  it('right-aligns each row’s real slots and zero-fills the padding', () => {
    const a = tracedCache(2, 5);
    const b = tracedCache(1, 3);
    // Row 1 of `a` has 4 real slots (its first slot is padding); `b` has 3.
    const packed = repackKvCache(
      [
        { cache: a, row: 1, realLength: 4 },
        { cache: b, row: 0, realLength: 3 },
      ],
      4,
      a,
    );
    expect(packed.batch).toBe(2);
    expect(packed.length).toBe(4);
    for (let layer = 0; layer < 2; layer++)
      for (let head = 0; head < 2; head++)
        for (let dim = 0; dim < 3; dim++) {
          for (let slot = 0; slot < 4; slot++) {
            expect(at(packed, layer, 0, head, slot, dim, 'k')).toBe(at(a, layer, 1, head, slot + 1, dim, 'k'));
            expect(at(packed, layer, 0, head, slot, dim, 'v')).toBe(at(a, layer, 1, head, slot + 1, dim, 'v'));
          }
          expect(at(packed, layer, 1, head, 0, dim, 'k')).toBe(0);
          for (let slot = 1; slot < 4; slot++) {
            expect(at(packed, layer, 1, head, slot, dim, 'k')).toBe(at(b, layer, 0, head, slot - 1, dim, 'k'));
          }
        }
  });

  it('refuses a row longer than the target', () => {
    const a = tracedCache(1, 5);
    expect(() => repackKvCache([{ cache: a, row: 0, realLength: 5 }], 4, a)).toThrow(/does not fit/);
  });
});
