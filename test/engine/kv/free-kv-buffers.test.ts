/**
 * A replaced KV cache gives its memory back at once (src/engine/kv/free-kv-buffers.ts) instead
 * of waiting for V8's next full collection; arrays the new cache still uses are kept.
 * That the batches' tokens stay right while their caches are replaced and freed is checked
 * by test/engine/kv/in-place-kv.test.ts (growth, rows joining and leaving, forks, speculation).
 */
import { describe, expect, it } from 'vitest';
import { freeReplacedKvBuffers } from '../../../src/engine/kv/free-kv-buffers.js';
import type { KvCache } from '../../../src/engine/kv/types.js';

const cache = (keys: Float32Array[], values: Float32Array[]): KvCache => ({ batch: 1, length: 4, heads: 1, headDim: 2, keys, values });

describe('freeing a replaced KV cache', () => {
  it("empties the replaced cache's own arrays (their memory leaves them) and keeps those the new cache shares", () => {
    const shared = new Float32Array(8).fill(3);
    const ownKey = new Float32Array(8).fill(1);
    const ownValue = new Float32Array(8).fill(2);
    const replaced = cache([ownKey, shared], [ownValue, shared]);
    const kept = cache([new Float32Array(8), shared], [new Float32Array(8), shared]);
    freeReplacedKvBuffers(replaced, kept);
    expect(ownKey.length).toBe(0);
    expect(ownKey.buffer.byteLength).toBe(0);
    expect(ownValue.length).toBe(0);
    expect([...shared]).toEqual(new Array(8).fill(3));
  });

  it('leaves views into larger buffers alone: another array may read the rest', () => {
    const whole = new Float32Array(16).fill(5);
    const view = whole.subarray(0, 8);
    const offset = whole.subarray(8);
    freeReplacedKvBuffers(cache([view], [offset]), cache([new Float32Array(8)], [new Float32Array(8)]));
    expect(view.length).toBe(8);
    expect(whole.length).toBe(16);
    expect(whole[15]).toBe(5);
  });

  it('does nothing when the cache is kept as it is', () => {
    const key = new Float32Array(8).fill(1);
    const same = cache([key], [new Float32Array(8)]);
    freeReplacedKvBuffers(same, same);
    expect(key.length).toBe(8);
  });
});
