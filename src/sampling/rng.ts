/**
 * Seedable pseudo-random numbers that are identical on every JS runtime (Node, workerd,
 * browsers): the generator is SplitMix64 (Steele, Lea & Flood, "Fast splittable
 * pseudorandom number generators", OOPSLA 2014), written with 32-bit integer halves so
 * the hot path needs neither BigInt nor floating-point rounding that could vary.
 *
 * Why SplitMix64 as the stream itself rather than only as a seeder: its state is exactly
 * one uint64, so every uint64 seed gives its own stream (seed → state is the identity),
 * its period is 2^64, it passes BigCrush, and its outputs for a given seed are published
 * (e.g. Rosetta Code "Pseudo-random numbers/Splitmix64"), so the implementation can be
 * checked against outside values. One draw per generated token is all sampling needs.
 *
 * Definition (all arithmetic mod 2^64):
 *   state += 0x9E3779B97F4A7C15
 *   z = state
 *   z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9
 *   z = (z ^ (z >>> 27)) * 0x94D049BB133111EB
 *   return z ^ (z >>> 31)
 * nextFloat() keeps the top 53 bits of that output: (z >>> 11) / 2^53, in [0, 1).
 */

export interface Rng {
  /** Uniform in [0, 1), 53 bits of precision. */
  nextFloat(): number;
}

const UINT64_MAX = (1n << 64n) - 1n;
const TWO_POW_21 = 2 ** 21;
const TWO_POW_53 = 2 ** 53;

export class SplitMix64 implements Rng {
  // The 64-bit state as two unsigned 32-bit halves.
  private hi: number;
  private lo: number;
  // Scratch for the latest output, to avoid allocating per draw.
  private outHi = 0;
  private outLo = 0;

  constructor(seed: bigint) {
    assertUint64(seed);
    this.hi = Number(seed >> 32n) >>> 0;
    this.lo = Number(seed & 0xffffffffn) >>> 0;
  }

  nextFloat(): number {
    this.step();
    // Top 53 bits: all 32 of the high half, then the high 21 of the low half.
    return (this.outHi * TWO_POW_21 + (this.outLo >>> 11)) / TWO_POW_53;
  }

  /** The full 64-bit output; for tests against published values and for deriving seeds. */
  nextUint64(): bigint {
    this.step();
    return (BigInt(this.outHi) << 32n) | BigInt(this.outLo);
  }

  private step(): void {
    // state += golden gamma 0x9E3779B97F4A7C15
    const lo = (this.lo + 0x7f4a7c15) >>> 0;
    const carry = lo < this.lo ? 1 : 0;
    this.hi = (this.hi + 0x9e3779b9 + carry) >>> 0;
    this.lo = lo;

    let zHi = this.hi;
    let zLo = this.lo;

    // z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9
    zLo = (zLo ^ ((zLo >>> 30) | (zHi << 2))) >>> 0;
    zHi = (zHi ^ (zHi >>> 30)) >>> 0;
    mul64(zHi, zLo, 0xbf58476d, 0x1ce4e5b9);
    zHi = product.hi;
    zLo = product.lo;

    // z = (z ^ (z >>> 27)) * 0x94D049BB133111EB
    zLo = (zLo ^ ((zLo >>> 27) | (zHi << 5))) >>> 0;
    zHi = (zHi ^ (zHi >>> 27)) >>> 0;
    mul64(zHi, zLo, 0x94d049bb, 0x133111eb);
    zHi = product.hi;
    zLo = product.lo;

    // z ^ (z >>> 31)
    this.outLo = (zLo ^ ((zLo >>> 31) | (zHi << 1))) >>> 0;
    this.outHi = (zHi ^ (zHi >>> 31)) >>> 0;
  }
}

/** Result slot of mul64, shared to keep the hot path allocation-free (JS is single-threaded). */
const product = { hi: 0, lo: 0 };

/** (aHi:aLo * bHi:bLo) mod 2^64 from unsigned 32-bit halves, into `product`. */
function mul64(aHi: number, aLo: number, bHi: number, bLo: number): void {
  // The low halves' full 64-bit product, from 16-bit limbs so every partial product is
  // exact in a double; the cross terms only contribute their low 32 bits (Math.imul).
  const a0 = aLo & 0xffff;
  const a1 = aLo >>> 16;
  const b0 = bLo & 0xffff;
  const b1 = bLo >>> 16;
  const p00 = a0 * b0;
  const p01 = a0 * b1;
  const p10 = a1 * b0;
  const p11 = a1 * b1;
  const mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  product.lo = (((mid & 0xffff) << 16) | (p00 & 0xffff)) >>> 0;
  const loHi = p11 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16);
  product.hi = (loHi + Math.imul(aHi, bLo) + Math.imul(aLo, bHi)) >>> 0;
}

function assertUint64(seed: bigint): void {
  if (typeof seed !== 'bigint' || seed < 0n || seed > UINT64_MAX) {
    throw new RangeError(`seed must be an integer in [0, 2^64-1], got ${String(seed)}`);
  }
}

/** A fresh uint64 from the platform's CSPRNG (Web Crypto exists in Node 20, workerd and browsers). */
export function randomSeed(): bigint {
  const words = new Uint32Array(2);
  globalThis.crypto.getRandomValues(words);
  return (BigInt(words[0]) << 32n) | BigInt(words[1]);
}

/** A generator for `seed` (uint64), or for a random seed when none is given. */
export function createRng(seed?: bigint): SplitMix64 {
  return new SplitMix64(seed ?? randomSeed());
}
