import { describe, expect, it } from 'vitest';
import { kthLargest } from '../../src/sampling/select.js';

function pseudoRandomRow(n: number, seed: number, levels?: number): Float32Array {
  const row = new Float32Array(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    const u = x / 2 ** 32;
    row[i] = levels ? Math.floor(u * levels) : u * 40 - 20;
  }
  return row;
}

describe('kthLargest', () => {
  it('agrees with sorting for every k of a small row', () => {
    const row = Float32Array.from([3, -1, 7, 7, 0, 2.5, -Infinity, 7, 1]);
    const sorted = [...row].sort((a, b) => b - a);
    const scratch = new Float32Array(row.length);
    for (let k = 1; k <= row.length; k++) {
      expect(kthLargest(row, k, scratch), `k=${k}`).toBe(sorted[k - 1]);
    }
  });

  it('agrees with sorting on large rows, with and without heavy ties', () => {
    for (const [seed, levels] of [[1, undefined], [2, 5], [3, 1]] as const) {
      const row = pseudoRandomRow(20_000, seed, levels);
      const sorted = [...row].sort((a, b) => b - a);
      const scratch = new Float32Array(row.length);
      for (const k of [1, 2, 50, 1_000, 10_000, 19_999, 20_000]) {
        expect(kthLargest(row, k, scratch)).toBe(sorted[k - 1]);
      }
    }
  });

  it('handles rows that are mostly -Infinity (after an earlier filter)', () => {
    const row = new Float32Array(10_000).fill(-Infinity);
    row[17] = 1;
    row[4_000] = 3;
    const scratch = new Float32Array(row.length);
    expect(kthLargest(row, 1, scratch)).toBe(3);
    expect(kthLargest(row, 2, scratch)).toBe(1);
    expect(kthLargest(row, 3, scratch)).toBe(-Infinity);
  });

  it('leaves the input untouched and rejects k out of range', () => {
    const row = Float32Array.from([2, 1, 3]);
    kthLargest(row, 2, new Float32Array(3));
    expect([...row]).toEqual([2, 1, 3]);
    expect(() => kthLargest(row, 0, new Float32Array(3))).toThrow(RangeError);
    expect(() => kthLargest(row, 4, new Float32Array(3))).toThrow(RangeError);
  });
});
