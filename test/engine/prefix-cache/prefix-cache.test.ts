/**
 * The prefix cache's bookkeeping on host arrays: longest kept prefix, token-exact from
 * MIN_REUSE_TOKENS on (never the prompt's last token), namespaces kept apart, a sequence extending a kept one replacing
 * it, least-recently-used eviction within the capacity, and the reused slots' contents.
 */
import { describe, expect, it } from 'vitest';
import { MIN_REUSE_TOKENS, PrefixCache } from '../../../src/engine/prefix-cache/prefix-cache.js';
import type { KvCache } from '../../../src/engine/kv/types.js';

const HEADS = 2;
const HEAD_DIM = 3;
/** Keys and values of one layer, two heads of three: 2 × 2 × 3 floats a token, 4 bytes each. */
const BYTES_PER_TOKEN = 2 * HEADS * HEAD_DIM * 4;

/** A one-row cache whose slot s holds the value tokens[s] (so copies can be checked). */
function cacheOf(tokens: readonly number[]): KvCache {
  const length = tokens.length;
  const keys = new Float32Array(HEADS * length * HEAD_DIM);
  for (let head = 0; head < HEADS; head++) for (let slot = 0; slot < length; slot++) keys.fill(tokens[slot]!, (head * length + slot) * HEAD_DIM, (head * length + slot + 1) * HEAD_DIM);
  return { batch: 1, length, heads: HEADS, headDim: HEAD_DIM, keys: [keys], values: [keys.map((value) => -value)] };
}

const seq = (length: number, start = 0) => Array.from({ length }, (_, i) => start + i);

describe('PrefixCache', () => {
  it('reuses the longest kept prefix, token-exact, never the last token, with the kept slots copied', () => {
    const cache = new PrefixCache(BYTES_PER_TOKEN, () => Infinity);
    const kept = seq(40);
    cache.insert('base', kept, cacheOf(kept), 0);
    // 40 tokens in common, but the prompt's last token runs: 39 reused.
    const hit = cache.lookup('base', seq(40))!;
    expect(hit.tokens).toBe(39);
    expect(hit.past.length).toBe(39);
    expect(Array.from(hit.past.keys[0]!.subarray(0, 39 * HEAD_DIM).filter((_, i) => i % HEAD_DIM === 0))).toEqual(seq(39));
    expect(hit.past.values[0]![HEADS * 39 * HEAD_DIM - 1]).toBe(-38);
    // 20 tokens in common: 20.
    expect(cache.lookup('base', [...seq(20), 999, 998, 997])!.tokens).toBe(20);
    // Fewer than MIN_REUSE_TOKENS in common, or another namespace: nothing.
    expect(cache.lookup('base', [...seq(MIN_REUSE_TOKENS - 1), 999, ...seq(30)])).toBeNull();
    expect(cache.lookup('lora:1', seq(40))).toBeNull();
    expect(cache.stats()).toMatchObject({ queries: 40 + 23 + 46 + 40, hits: 39 + 20 });
  });

  it('replaces a kept sequence by one extending it, and keeps one that a new sequence only starts', () => {
    const cache = new PrefixCache(BYTES_PER_TOKEN, () => Infinity);
    cache.insert('base', seq(40), cacheOf(seq(40)), 0);
    cache.insert('base', seq(80), cacheOf(seq(80)), 0);
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 80 * BYTES_PER_TOKEN });
    cache.insert('base', seq(60), cacheOf(seq(60)), 0);
    expect(cache.stats().entries).toBe(1);
    expect(cache.lookup('base', seq(100))!.tokens).toBe(80);
  });

  it('evicts the least recently used sequences to stay within its capacity, and keeps nothing larger than it', () => {
    let capacity = 100 * BYTES_PER_TOKEN;
    const cache = new PrefixCache(BYTES_PER_TOKEN, () => capacity);
    const a = seq(40, 1000);
    const b = seq(40, 2000);
    const c = seq(40, 3000);
    cache.insert('base', a, cacheOf(a), 0);
    cache.insert('base', b, cacheOf(b), 0);
    cache.lookup('base', a);
    // a was used after b: b goes to make room for c.
    cache.insert('base', c, cacheOf(c), 0);
    expect(cache.peek('base', a)).toBe(39);
    expect(cache.peek('base', b)).toBe(0);
    expect(cache.peek('base', c)).toBe(39);
    expect(cache.stats().bytes).toBeLessThanOrEqual(capacity);
    cache.insert('base', seq(120, 5000), cacheOf(seq(120, 5000)), 0);
    expect(cache.peek('base', seq(120, 5000))).toBe(0);
    // The running sequences grew: fit() gives their memory back.
    capacity = 50 * BYTES_PER_TOKEN;
    expect(cache.fit(capacity)).toBe(true);
    expect(cache.stats().entries).toBe(1);
  });

  it('keeps a row of a cache of several rows (a shared prefill), its own slots only', () => {
    const cache = new PrefixCache(BYTES_PER_TOKEN, () => Infinity);
    const rows = [seq(20, 100), seq(20, 200)];
    const keys = new Float32Array(2 * HEADS * 20 * HEAD_DIM);
    rows.forEach((tokens, row) => {
      const one = cacheOf(tokens).keys[0]!;
      keys.set(one, row * one.length);
    });
    const twoRows: KvCache = { batch: 2, length: 20, heads: HEADS, headDim: HEAD_DIM, keys: [keys], values: [keys.map((value) => -value)] };
    cache.insert('base', rows[1]!, twoRows, 1);
    const hit = cache.lookup('base', [...rows[1]!, 7])!;
    expect(hit.tokens).toBe(20);
    expect(hit.past.keys[0]![0]).toBe(200);
    expect(hit.past.keys[0]![15 * HEAD_DIM]).toBe(215);
    expect(cache.peek('base', [...rows[0]!, 7])).toBe(0);
  });

  it('adopts an in-place row without copying it, counting its room, and hands it over to the prompt that extends it', () => {
    const cache = new PrefixCache(BYTES_PER_TOKEN, () => Infinity);
    const tokens = seq(40);
    // An in-place row of 64 slots whose first 40 are the tokens' KV (the rest free).
    const row = cacheOf([...tokens, ...seq(24, 900)]);
    expect(cache.adopt('base', tokens, row)).toBe(true);
    expect(cache.stats()).toMatchObject({ entries: 1, bytes: 64 * BYTES_PER_TOKEN });
    // The same prompt again: its last token runs, so 39 slots are copied out and the row stays kept.
    const again = cache.lookup('base', tokens, 64)!;
    expect(again.tokens).toBe(39);
    expect(again.past).not.toBe(row);
    expect(again.past.length).toBe(64);
    expect(Array.from(again.past.keys[0]!.subarray(0, 39 * HEAD_DIM).filter((_, i) => i % HEAD_DIM === 0))).toEqual(seq(39));
    expect(cache.stats().entries).toBe(1);
    // A prompt the whole row starts (a chat's next turn) takes the row itself: nothing is copied, nothing stays.
    const next = cache.lookup('base', [...tokens, 7, 8, 9], 64)!;
    expect(next.tokens).toBe(40);
    expect(next.past).toBe(row);
    expect(cache.stats()).toMatchObject({ entries: 0, bytes: 0 });
    // Without room (a graph that is not in place), a hit is always a copy of exactly the reused slots.
    cache.insert('base', tokens, cacheOf(tokens), 0);
    expect(cache.lookup('base', [...tokens, 7], undefined)!.past.length).toBe(40);
    expect(cache.stats().entries).toBe(1);
  });

  it('refuses to adopt what it cannot count or would not keep', () => {
    const cache = new PrefixCache(BYTES_PER_TOKEN, () => 50 * BYTES_PER_TOKEN);
    // Too short to reuse, larger than the capacity, rows beyond one (a batch that shrank in place).
    expect(cache.adopt('base', seq(10), cacheOf(seq(10)))).toBe(false);
    expect(cache.adopt('base', seq(40), cacheOf(seq(64)))).toBe(false);
    const twoRows = cacheOf(seq(40));
    twoRows.keys[0] = new Float32Array(2 * twoRows.keys[0]!.length);
    expect(cache.adopt('base', seq(40), twoRows)).toBe(false);
    expect(cache.stats().entries).toBe(0);
  });
});
