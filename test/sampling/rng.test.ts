import { describe, expect, it } from 'vitest';
import { createRng, SplitMix64 } from '../../src/sampling/rng.js';

const UINT64_MAX = (1n << 64n) - 1n;

/** SplitMix64 straight from its definition, with BigInt: an independent reference. */
function* referenceSplitMix64(seed: bigint): Generator<bigint> {
  let state = seed;
  for (;;) {
    state = BigInt.asUintN(64, state + 0x9e3779b97f4a7c15n);
    let z = state;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    yield z ^ (z >> 31n);
  }
}

describe('SplitMix64', () => {
  it('reproduces the published first outputs for seed 1234567 (Rosetta Code)', () => {
    const rng = new SplitMix64(1234567n);
    expect(Array.from({ length: 5 }, () => rng.nextUint64())).toEqual([
      6457827717110365317n,
      3203168211198807973n,
      9817491932198370423n,
      4593380528125082431n,
      16408922859458223821n,
    ]);
  });

  it('reproduces the published bucket counts of floor(nextFloat() * 5) for seed 987654321', () => {
    const rng = createRng(987654321n);
    const counts = [0, 0, 0, 0, 0];
    for (let i = 0; i < 100_000; i++) counts[Math.floor(rng.nextFloat() * 5)]++;
    expect(counts).toEqual([20027, 19892, 20073, 19978, 20030]);
  });

  it('matches a BigInt implementation of the definition, including carries near 2^64', () => {
    for (const seed of [0n, 1n, 0xffffffffn, 0x100000000n, UINT64_MAX - 1n, UINT64_MAX, 0x6162636465666768n]) {
      const rng = new SplitMix64(seed);
      const reference = referenceSplitMix64(seed);
      for (let i = 0; i < 200; i++) {
        expect(rng.nextUint64()).toBe(reference.next().value);
      }
    }
  });

  it('nextFloat is the top 53 bits of the 64-bit output over 2^53', () => {
    const rng = createRng(1234567n);
    expect(rng.nextFloat()).toBe(Number(6457827717110365317n >> 11n) / 2 ** 53);
    expect(rng.nextFloat()).toBe(Number(3203168211198807973n >> 11n) / 2 ** 53);
  });
});

describe('createRng', () => {
  it('same seed → same stream; different seeds → different streams', () => {
    const draw = (seed: bigint) => {
      const rng = createRng(seed);
      return Array.from({ length: 20 }, () => rng.nextFloat());
    };
    expect(draw(42n)).toEqual(draw(42n));
    expect(draw(42n)).not.toEqual(draw(43n));
    expect(draw(UINT64_MAX)).toEqual(draw(UINT64_MAX));
    expect(draw(UINT64_MAX)).not.toEqual(draw(0n));
  });

  it('accepts the whole uint64 range exactly and rejects values outside it', () => {
    // 2^64-1 and 2^64-2 would collapse to the same double; as BigInt they must not.
    expect(createRng(UINT64_MAX).nextFloat()).not.toBe(createRng(UINT64_MAX - 1n).nextFloat());
    expect(() => createRng(1n << 64n)).toThrow(RangeError);
    expect(() => createRng(-1n)).toThrow(RangeError);
  });

  it('draws a fresh seed when none is given', () => {
    const a = Array.from({ length: 4 }, () => createRng().nextFloat());
    expect(new Set(a).size).toBe(4);
  });

  it('produces floats in [0, 1) spread uniformly (chi-square over 20 bins, p < 0.001)', () => {
    const rng = createRng(2024n);
    const bins = new Array<number>(20).fill(0);
    const draws = 40_000;
    let outOfRange = 0;
    for (let i = 0; i < draws; i++) {
      const u = rng.nextFloat();
      if (!(u >= 0 && u < 1)) outOfRange++;
      else bins[Math.floor(u * 20)]++;
    }
    expect(outOfRange).toBe(0);
    const expected = draws / 20;
    const chi2 = bins.reduce((sum, observed) => sum + (observed - expected) ** 2 / expected, 0);
    expect(chi2).toBeLessThan(43.82); // χ²(19 df) at p = 0.001
  });
});
