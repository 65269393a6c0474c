/**
 * A deterministic PRNG (mulberry32) for fixtures and fuzzing: tiny and seedable, so every
 * run builds the same weights, adapters and request bodies. Not for sampling (that is
 * src/sampling/rng.ts, which follows the engine's seed semantics).
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
