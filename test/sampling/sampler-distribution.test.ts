import { describe, expect, it } from 'vitest';
import { defaultSamplingParams, type SamplingParams } from '../../src/sampling/params.js';
import { Sampler } from '../../src/sampling/sampler.js';

/**
 * Goodness of fit of seeded draws against hand-derived distributions. The seed makes each
 * test deterministic; the p = 0.001 critical values make a wrong distribution fail.
 */
const DRAWS = 20_000;
/** χ² critical values at p = 0.001, by degrees of freedom. */
const CHI2_CRITICAL_P001: Record<number, number> = {
  1: 10.828,
  2: 13.816,
  3: 16.266,
  4: 18.467,
  5: 20.515,
  6: 22.458,
};

// softmax of log(weights) is weights / sum: p = .025 .05 .075 .1 .15 .2 .4
const WEIGHTS = [1, 2, 3, 4, 6, 8, 16];

function drawCounts(overrides: Partial<SamplingParams>, seed: bigint): number[] {
  const sampler = new Sampler(defaultSamplingParams({ ...overrides, seed }), {
    vocabSize: WEIGHTS.length,
    eosTokenIds: [],
  });
  const counts = new Array<number>(WEIGHTS.length).fill(0);
  const history = { promptTokenIds: [], outputTokenIds: [] };
  for (let i = 0; i < DRAWS; i++) {
    counts[sampler.sample(Float32Array.from(WEIGHTS, Math.log), history).tokenId]++;
  }
  return counts;
}

/** Expected probabilities ∝ `relative` (0 = must never be drawn). */
function normalise(relative: number[]): number[] {
  const sum = relative.reduce((a, b) => a + b, 0);
  return relative.map((r) => r / sum);
}

function chiSquare(counts: number[], expected: number[]): number {
  let chi2 = 0;
  counts.forEach((observed, i) => {
    if (expected[i] > 0) chi2 += (observed - DRAWS * expected[i]) ** 2 / (DRAWS * expected[i]);
  });
  return chi2;
}

function expectDistribution(counts: number[], expected: number[]): void {
  const allowed = expected.filter((p) => p > 0).length;
  counts.forEach((c, i) => {
    if (expected[i] === 0) expect(c, `token ${i} is outside the allowed set`).toBe(0);
  });
  expect(chiSquare(counts, expected)).toBeLessThan(CHI2_CRITICAL_P001[allowed - 1]);
}

describe('sampling distribution (χ², 20k seeded draws, p < 0.001)', () => {
  it('plain sampling follows softmax(logits)', () => {
    expectDistribution(drawCounts({}, 1n), normalise(WEIGHTS));
  });

  it('temperature 0.5 squares the weights; the test rejects the unscaled distribution', () => {
    const counts = drawCounts({ temperature: 0.5 }, 2n);
    expectDistribution(counts, normalise(WEIGHTS.map((w) => w ** 2)));
    // The threshold has teeth: the same draws are far from the un-tempered distribution.
    expect(chiSquare(counts, normalise(WEIGHTS))).toBeGreaterThan(CHI2_CRITICAL_P001[6]);
  });

  it('temperature 2 takes square roots of the weights', () => {
    const counts = drawCounts({ temperature: 2 }, 3n);
    expectDistribution(counts, normalise(WEIGHTS.map(Math.sqrt)));
    expect(chiSquare(counts, normalise(WEIGHTS))).toBeGreaterThan(CHI2_CRITICAL_P001[6]);
  });

  it('top-k 3 renormalises over the three most likely tokens', () => {
    expectDistribution(drawCounts({ topK: 3 }, 4n), normalise([0, 0, 0, 0, 6, 8, 16]));
  });

  it('top-p 0.5 keeps 16 (mass above 0) and 8 (mass above .4)', () => {
    expectDistribution(drawCounts({ topP: 0.5 }, 5n), normalise([0, 0, 0, 0, 0, 8, 16]));
  });

  it('min-p 0.2 keeps tokens with p >= .2 * .4 = .08', () => {
    expectDistribution(drawCounts({ minP: 0.2 }, 6n), normalise([0, 0, 0, 4, 6, 8, 16]));
  });

  it('top-p sees the distribution renormalised by top-k', () => {
    // After top-k 4 the mass above 4 is 30/34 ≈ .88 >= .8, so 4 goes; on the raw
    // distribution it would be .75 < .8 and 4 would stay.
    expectDistribution(drawCounts({ topK: 4, topP: 0.8 }, 7n), normalise([0, 0, 0, 0, 6, 8, 16]));
  });

  it('temperature applies before top-p', () => {
    // T=.5: weights 1 4 9 16 36 64 256 (sum 386); mass above 64 is .663 < .7, above 36 is .829.
    expectDistribution(drawCounts({ temperature: 0.5, topP: 0.7 }, 8n), normalise([0, 0, 0, 0, 0, 64, 256]));
  });

  it('temperature applies before min-p', () => {
    // T=.5: min-p .1 of the top weight 256 is 25.6, keeping 36, 64, 256.
    expectDistribution(
      drawCounts({ temperature: 0.5, minP: 0.1 }, 9n),
      normalise([0, 0, 0, 0, 36, 64, 256]),
    );
  });

  it('penalties shift the distribution before sampling', () => {
    // Token 6 in the output once: presence 1 + frequency 1 subtract 2 → weight 16/e².
    const sampler = new Sampler(defaultSamplingParams({ presencePenalty: 1, frequencyPenalty: 1, seed: 10n }), {
      vocabSize: WEIGHTS.length,
      eosTokenIds: [],
    });
    const counts = new Array<number>(WEIGHTS.length).fill(0);
    const history = { promptTokenIds: [6], outputTokenIds: [6] };
    for (let i = 0; i < DRAWS; i++) {
      counts[sampler.sample(Float32Array.from(WEIGHTS, Math.log), history).tokenId]++;
    }
    const relative = [...WEIGHTS];
    relative[6] = 16 / Math.E ** 2;
    expectDistribution(counts, normalise(relative));
  });
});
