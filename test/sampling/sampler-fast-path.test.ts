/**
 * The sampler's shortcuts pick exactly the tokens of its general path: greedy decoding
 * without logprobs is one argmax pass (no softmax), top-p skips the exp of banned tokens.
 * Property-style, over seeded random rows with ties, -Infinity, NaN and +Infinity entries.
 */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../scripts/seeded-random.js';
import { defaultSamplingParams, type SamplingParams } from '../../src/sampling/params.js';
import { TopPProcessor } from '../../src/sampling/processors/top-p.js';
import { Sampler, tokenLogprobNeeded, type SampledToken } from '../../src/sampling/sampler.js';

type Spice = 'plain' | 'ties' | 'banned' | 'nan' | 'infinite';

/** A random logits row; `spice` adds the entries the shortcuts must treat as the general path does. */
function randomRow(random: () => number, vocab: number, spice: Spice): Float32Array {
  const row = new Float32Array(vocab);
  for (let i = 0; i < vocab; i++) {
    const u = random();
    if (spice === 'ties') row[i] = Math.floor(random() * 3);
    else if (spice === 'banned' && u < 0.6) row[i] = -Infinity;
    else if (spice === 'nan' && u < 0.2) row[i] = NaN;
    else row[i] = (random() - 0.5) * 20;
  }
  if (spice === 'infinite') {
    row[Math.floor(random() * vocab)] = Infinity;
    row[Math.floor(random() * vocab)] = Infinity;
  }
  return row;
}

/** The lowest id of the largest entry, NaN never winning: what greedy decoding picks. */
function referenceArgmax(row: Float32Array): number {
  let best = -1;
  for (let i = 0; i < row.length; i++) if (row[i] > -Infinity && (best < 0 || row[i] > row[best])) best = i;
  return best;
}

const SPICES: Spice[] = ['plain', 'ties', 'banned', 'nan', 'infinite'];
const EOS = [0];

/** Samples each row in turn, as a sequence's sampler would (it asks for logprobs only when read). */
function run(overrides: Partial<SamplingParams>, rows: Float32Array[]): Array<SampledToken | string> {
  const params = defaultSamplingParams(overrides);
  const sampler = new Sampler(params, { vocabSize: rows[0].length, eosTokenIds: EOS, tokenLogprob: tokenLogprobNeeded(params) });
  const history = { promptTokenIds: [1, 2, 3], outputTokenIds: [] as number[] };
  return rows.map((row) => {
    try {
      const token = sampler.sample(row.slice(), history);
      history.outputTokenIds.push(token.tokenId);
      return token;
    } catch (error) {
      return (error as Error).message;
    }
  });
}

describe('greedy without logprobs (one argmax pass)', () => {
  it('picks the tokens of the path that computes logprobs, and of a reference argmax', () => {
    const random = seededRandom(16);
    for (let trial = 0; trial < 400; trial++) {
      const vocab = 1 + Math.floor(random() * 200);
      const spice = SPICES[trial % SPICES.length];
      const rows = Array.from({ length: 6 }, () => randomRow(random, vocab, spice));
      // Penalties, bias and min_tokens change the row before the argmax, on either path.
      const processed: Partial<SamplingParams> =
        trial % 3 === 0 ? {} : { repetitionPenalty: 1.4, presencePenalty: 0.3, frequencyPenalty: 0.2, minTokens: 2, logitBias: new Map([[vocab - 1, 5]]) };
      const fast = run({ temperature: 0, ...processed }, rows);
      const general = run({ temperature: 0, logprobs: 0, ...processed }, rows);
      expect(fast.map((t) => (typeof t === 'string' ? t : t.tokenId))).toEqual(general.map((t) => (typeof t === 'string' ? t : t.tokenId)));
      if (trial % 3 === 0) {
        const expected = rows.map((row) => (referenceArgmax(row) < 0 ? 'none' : referenceArgmax(row)));
        expect(fast.map((t) => (typeof t === 'string' ? 'none' : t.tokenId))).toEqual(expected);
      }
      for (const token of fast) if (typeof token !== 'string') expect(token.logprob).toBeNaN();
    }
  });

  it('still computes the logprob when best_of > n ranks sequences by it', () => {
    const random = seededRandom(3);
    const rows = Array.from({ length: 8 }, () => randomRow(random, 64, 'plain'));
    const ranked = run({ temperature: 0, n: 1, bestOf: 2 }, rows);
    const reported = run({ temperature: 0, logprobs: 0 }, rows);
    ranked.forEach((token, i) => {
      expect(typeof token).toBe('object');
      expect((token as SampledToken).logprob).toBe((reported[i] as SampledToken).logprob);
      expect((token as SampledToken).logprob).toBeLessThanOrEqual(0);
    });
    expect(tokenLogprobNeeded({})).toBe(false);
    expect(tokenLogprobNeeded({ n: 2, bestOf: 2 })).toBe(false);
    expect(tokenLogprobNeeded({ n: 2, bestOf: 3 })).toBe(true);
    expect(tokenLogprobNeeded({ logprobs: 0 })).toBe(true);
  });

  it('fails a row with no finite logit as the general path does', () => {
    const rows = [Float32Array.from([-Infinity, NaN, -Infinity])];
    expect(run({ temperature: 0 }, rows)).toEqual(run({ temperature: 0, logprobs: 0 }, rows));
    expect(run({ temperature: 0 }, rows)[0]).toMatch(/no finite logit/);
  });
});

describe('top-p on rows with banned tokens', () => {
  /** vLLM's rule by sorting: keep a token while the mass ranked above it is < topP (ids break ties). */
  function referenceTopP(row: Float32Array, topP: number): boolean[] {
    const max = Math.max(...[...row].filter((v) => v > -Infinity));
    const weights = [...row].map((v) => Math.exp(v - max));
    const total = weights.reduce((sum, w) => sum + w, 0);
    const order = weights.map((w, id) => ({ w, id })).sort((a, b) => b.w - a.w || a.id - b.id);
    const kept = new Array<boolean>(row.length).fill(false);
    let above = 0;
    for (const { w, id } of order) {
      if (w > 0 && (above < topP * total || above === 0)) kept[id] = true;
      above += w;
    }
    return kept;
  }

  it('keeps the tokens a full sort keeps', () => {
    const random = seededRandom(5);
    for (let trial = 0; trial < 300; trial++) {
      const row = randomRow(random, 2 + Math.floor(random() * 300), trial % 2 === 0 ? 'banned' : 'ties');
      if (!row.some((v) => v > -Infinity)) continue;
      const topP = 0.05 + random() * 0.9;
      const filtered = row.slice();
      new TopPProcessor(topP).process(filtered);
      expect([...filtered].map((v) => v > -Infinity)).toEqual(referenceTopP(row, topP));
    }
  });
});
