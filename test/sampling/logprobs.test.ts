import { describe, expect, it } from 'vitest';
import { logSoftmaxInPlace, logSumExp, promptLogprobs, tokenRank, topLogprobs, topTokenIds } from '../../src/sampling/logprobs.js';
import { defaultSamplingParams, type SamplingParams } from '../../src/sampling/params.js';
import { createRng } from '../../src/sampling/rng.js';
import { Sampler, type SequenceHistory } from '../../src/sampling/sampler.js';

const EMPTY: SequenceHistory = { promptTokenIds: [], outputTokenIds: [] };

/** Reference: ids sorted by value descending, lower id first on ties, -Infinity left out. */
function sortedIds(values: number[]): number[] {
  return values
    .map((value, id) => ({ value, id }))
    .filter(({ value }) => value > -Infinity)
    .sort((a, b) => b.value - a.value || a.id - b.id)
    .map(({ id }) => id);
}

/** Reference log-softmax in double precision, straight from the definition. */
function logSoftmax(values: number[]): number[] {
  const total = values.reduce((sum, v) => sum + Math.exp(v), 0);
  return values.map((v) => Math.log(Math.exp(v) / total));
}

function randomRow(length: number, seed: bigint, options: { ties?: boolean; banned?: number } = {}): number[] {
  const rng = createRng(seed);
  return Array.from({ length }, () => {
    const u = rng.nextFloat();
    if (options.banned !== undefined && u < options.banned) return -Infinity;
    // Coarse values make ties common when asked for.
    return options.ties ? Math.round(rng.nextFloat() * 4) : rng.nextFloat() * 10 - 5;
  });
}

describe('topTokenIds', () => {
  it.each([
    ['distinct values', {}],
    ['many ties', { ties: true }],
    ['banned tokens', { banned: 0.3 }],
  ])('matches a full sort (%s)', (_name, options) => {
    for (let seed = 1n; seed <= 20n; seed++) {
      const values = randomRow(200, seed, options);
      for (const k of [1, 3, 20, 64]) {
        expect(topTokenIds(Float32Array.from(values), k)).toEqual(sortedIds(Array.from(Float32Array.from(values))).slice(0, k));
      }
    }
  });

  it('returns fewer than k ids when fewer tokens are possible, none for k = 0', () => {
    expect(topTokenIds([-Infinity, 2, -Infinity, 1], 3)).toEqual([1, 3]);
    expect(topTokenIds([1, 2, 3], 0)).toEqual([]);
  });
});

describe('log-softmax, rank', () => {
  it('agrees with the definition and normalises to 1', () => {
    const values = randomRow(50, 7n);
    const row = logSoftmaxInPlace(Float32Array.from(values));
    const expected = logSoftmax(values);
    row.forEach((v, i) => expect(v).toBeCloseTo(expected[i], 5));
    expect([...row].reduce((sum, v) => sum + Math.exp(v), 0)).toBeCloseTo(1, 5);
  });

  it('stays finite for large scores and keeps banned tokens at -Infinity', () => {
    const row = logSoftmaxInPlace(Float32Array.from([1000, 1000, -Infinity]));
    expect([...row]).toEqual([-Math.LN2, -Math.LN2, -Infinity].map((v) => Math.fround(v)));
    expect(logSumExp([-Infinity, -Infinity])).toBe(-Infinity);
  });

  it('ranks a token by the number of strictly better ones', () => {
    const values = [0.5, 2, 2, -1, 1];
    expect(tokenRank(values, 1)).toBe(1);
    expect(tokenRank(values, 2)).toBe(1);
    expect(tokenRank(values, 4)).toBe(3);
    expect(tokenRank(values, 3)).toBe(5);
  });

  it('reports the top tokens relative to a normaliser', () => {
    const values = [0, 3, 1];
    const normalizer = logSumExp(values);
    const top = topLogprobs(values, 2, normalizer);
    expect(top.map((t) => t.tokenId)).toEqual([1, 2]);
    expect(top[0].logprob).toBeCloseTo(logSoftmax(values)[1], 10);
    expect(top[1].logprob).toBeCloseTo(logSoftmax(values)[2], 10);
  });
});

describe('promptLogprobs', () => {
  it('scores each prompt token with the row of the position before it', () => {
    const vocab = 4;
    const rows = [
      [0, 1, 2, 3],
      [3, 0, 0, 0],
      [1, 1, 5, 1],
    ];
    const logits = Float32Array.from(rows.flat());
    const prompt = [2, 1, 0];
    const out = promptLogprobs(logits, prompt, vocab, 2);
    expect(out).toHaveLength(3);
    expect(out[0]).toBeNull();
    // Token 1 at position 1, predicted by row 0.
    expect(out[1]!.tokenId).toBe(1);
    expect(out[1]!.logprob).toBeCloseTo(logSoftmax(rows[0])[1], 5);
    expect(out[1]!.rank).toBe(3);
    expect(out[1]!.top.map((t) => t.tokenId)).toEqual([3, 2]);
    // Token 0 at position 2, predicted by row 1, where it is the favourite.
    expect(out[2]!.rank).toBe(1);
    expect(out[2]!.logprob).toBeCloseTo(logSoftmax(rows[1])[0], 5);
    expect(out[2]!.top[0]).toEqual({ tokenId: 0, logprob: out[2]!.logprob });
  });
});

describe('Sampler logprobs', () => {
  function samplerFor(overrides: Partial<SamplingParams>, vocabSize: number) {
    return new Sampler(defaultSamplingParams(overrides), { vocabSize, eosTokenIds: [] });
  }

  it('with processed_logprobs, reports the k best tokens of the distribution it samples from (temperature applied)', () => {
    const values = randomRow(64, 3n);
    const temperature = 0.7;
    const processed = logSoftmax(values.map((v) => v / temperature));
    const sampler = samplerFor({ temperature, seed: 5n, logprobs: 5, logprobsMode: 'processed_logprobs' }, 64);
    const sampled = sampler.sample(Float32Array.from(values), EMPTY);
    expect(sampled.logprob).toBeCloseTo(processed[sampled.tokenId], 4);
    const expectedTop = sortedIds(processed).slice(0, 5);
    expect(sampled.topLogprobs!.map((t) => t.tokenId)).toEqual(expectedTop);
    sampled.topLogprobs!.forEach((t) => expect(t.logprob).toBeCloseTo(processed[t.tokenId], 4));
  });

  it('with processed_logprobs, leaves out tokens a filter removed, and reports nothing extra without params.logprobs', () => {
    const sampler = samplerFor({ temperature: 1, topK: 2, seed: 1n, logprobs: 4, logprobsMode: 'processed_logprobs' }, 5);
    const sampled = sampler.sample(Float32Array.from([0, 4, 1, 3, 2]), EMPTY);
    expect(sampled.topLogprobs!.map((t) => t.tokenId)).toEqual([1, 3]);
    const total = sampled.topLogprobs!.reduce((sum, t) => sum + Math.exp(t.logprob), 0);
    expect(total).toBeCloseTo(1, 5);
    expect(samplerFor({ temperature: 1, seed: 1n }, 3).sample(Float32Array.from([0, 1, 2]), EMPTY).topLogprobs).toBeUndefined();
  });

  it('gives beam search the log-softmax of the penalised row, without sampling', () => {
    const sampler = samplerFor({ temperature: 0, repetitionPenalty: 2, presencePenalty: 0.5 }, 4);
    const history = { promptTokenIds: [0], outputTokenIds: [3] };
    const row = sampler.logprobs(Float32Array.from([4, 1, 0, -2]), history);
    // Token 0 (prompt): 4 / 2; token 3 (output): -2 * 2 - 0.5.
    const expected = logSoftmax([2, 1, 0, -4.5]);
    [...row].forEach((v, i) => expect(v).toBeCloseTo(expected[i], 5));
  });
});
