import { describe, expect, it } from 'vitest';
import { PROMPT_LOGPROBS_SLICE_ENTRIES, promptLogprobsInSlices } from '../../src/engine/prompt-logprobs-slices.js';
import { promptLogprobs } from '../../src/sampling/logprobs.js';
import { createRng } from '../../src/sampling/rng.js';

function randomLogits(positions: number, vocab: number, seed: bigint): Float32Array {
  const rng = createRng(seed);
  const logits = new Float32Array(positions * vocab);
  // Coarse values: ties in rank and top k are common, and must break the same way.
  for (let i = 0; i < logits.length; i++) logits[i] = Math.round(rng.nextFloat() * 40) / 4 - 5;
  return logits;
}

describe('prompt logprobs in slices', () => {
  const vocab = 300;
  const prompt = Array.from({ length: 41 }, (_, i) => (i * 37) % vocab);
  const logits = randomLogits(prompt.length, vocab, 7n);

  it.each([1, vocab - 1, vocab, 7 * vocab, 40 * vocab, 1000 * vocab])('equal the one-pass figures exactly (%i entries a slice)', async (entries) => {
    const sliced = await promptLogprobsInSlices(logits, prompt, vocab, 5, () => false, entries);
    expect(sliced).toEqual(promptLogprobs(logits, prompt, vocab, 5));
  });

  it('let the event loop run between slices: a timer fires while a long prompt is worked through', async () => {
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 0);
    const long = Array.from({ length: 400 }, (_, i) => i % 4096);
    const big = randomLogits(long.length, 4096, 3n);
    const slices = Math.ceil((long.length - 1) / Math.floor(PROMPT_LOGPROBS_SLICE_ENTRIES / 4096));
    const sliced = await promptLogprobsInSlices(big, long, 4096, 20, () => false);
    clearInterval(timer);
    expect(slices).toBeGreaterThan(10);
    expect(ticks).toBeGreaterThan(0);
    expect(sliced).toEqual(promptLogprobs(big, long, 4096, 20));
  });

  it('stop, returning null, once the request is abandoned', async () => {
    let asked = 0;
    const sliced = await promptLogprobsInSlices(logits, prompt, vocab, 5, () => ++asked >= 3, vocab);
    expect(sliced).toBeNull();
    expect(asked).toBe(3);
  });

  it('a prompt of one token has only the null entry', async () => {
    expect(await promptLogprobsInSlices(logits.subarray(0, vocab), [5], vocab, 5, () => false)).toEqual([null]);
  });
});
