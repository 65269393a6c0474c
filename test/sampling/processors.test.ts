import { describe, expect, it } from 'vitest';
import { MinPProcessor } from '../../src/sampling/processors/min-p.js';
import { MinTokensProcessor } from '../../src/sampling/processors/min-tokens.js';
import { PresenceFrequencyPenaltyProcessor } from '../../src/sampling/processors/presence-frequency-penalty.js';
import { RepetitionPenaltyProcessor } from '../../src/sampling/processors/repetition-penalty.js';
import { TemperatureProcessor } from '../../src/sampling/processors/temperature.js';
import { TopKProcessor } from '../../src/sampling/processors/top-k.js';
import { TopPProcessor } from '../../src/sampling/processors/top-p.js';
import { TokenHistory } from '../../src/sampling/token-history.js';

const NO_HISTORY = TokenHistory.from({ promptTokenIds: [], outputTokenIds: [] });
const row = (...values: number[]) => Float32Array.from(values);
const history = (promptTokenIds: number[], outputTokenIds: number[]) =>
  TokenHistory.from({ promptTokenIds, outputTokenIds });
/** Logits whose softmax is proportional to `weights`. */
const logitsFromWeights = (weights: number[]) => Float32Array.from(weights, Math.log);
const kept = (logits: Float32Array) =>
  [...logits].flatMap((v, i) => (v === -Infinity ? [] : [i]));

describe('MinTokensProcessor', () => {
  const logits = () => row(1, 2, 3, 4, 5);

  it('bans EOS and stop token ids while fewer than minTokens were generated', () => {
    const processor = new MinTokensProcessor(3, [4, 1]);
    const l = logits();
    processor.process(l, history([0, 4], [2, 2]));
    expect([...l]).toEqual([1, -Infinity, 3, 4, -Infinity]);
  });

  it('stops banning once minTokens tokens exist', () => {
    const processor = new MinTokensProcessor(3, [4, 1]);
    const l = logits();
    processor.process(l, history([], [2, 2, 3]));
    expect([...l]).toEqual([1, 2, 3, 4, 5]);
  });

  it('ignores ids outside the vocabulary', () => {
    const l = logits();
    new MinTokensProcessor(1, [99, -1]).process(l, NO_HISTORY);
    expect([...l]).toEqual([1, 2, 3, 4, 5]);
  });
});

describe('RepetitionPenaltyProcessor', () => {
  it('divides positive and multiplies non-positive logits of prompt and output tokens, once each', () => {
    // token 0 in the prompt, 1 twice and 3 once in the output, 2 and 4 unseen.
    const l = row(2, -2, 1, 0, 3);
    new RepetitionPenaltyProcessor(2).process(l, history([0, 0], [1, 1, 3]));
    // 2/2, -2*2, unseen, 0*2, unseen
    expect([...l]).toEqual([1, -4, 1, 0, 3]);
  });

  it('a penalty below 1 boosts seen tokens', () => {
    const l = row(3, -3);
    new RepetitionPenaltyProcessor(0.5).process(l, history([0, 1], []));
    expect([...l]).toEqual([6, -1.5]);
  });
});

describe('PresenceFrequencyPenaltyProcessor', () => {
  it('subtracts presence once and frequency per occurrence, over output tokens only', () => {
    const l = row(1, 1, 1, 1);
    // prompt token 3 must not be penalised; output: token 1 three times, token 2 once.
    new PresenceFrequencyPenaltyProcessor(0.5, 0.25).process(l, history([3, 3], [1, 2, 1, 1]));
    // 1 - (0.5 + 3*0.25) = -0.25 ; 1 - (0.5 + 0.25) = 0.25
    expect([...l]).toEqual([1, -0.25, 0.25, 1]);
  });

  it('negative penalties encourage repeats', () => {
    const l = row(0, 0);
    new PresenceFrequencyPenaltyProcessor(-1, -0.5).process(l, history([], [1, 1]));
    expect([...l]).toEqual([0, 2]);
  });
});

describe('TemperatureProcessor', () => {
  it('divides every logit by the temperature', () => {
    const l = row(1, -2, 0.5, 0);
    new TemperatureProcessor(0.5).process(l);
    expect([...l]).toEqual([2, -4, 1, 0]);
    new TemperatureProcessor(4).process(l);
    expect([...l]).toEqual([0.5, -1, 0.25, 0]);
  });

  it('rejects a non-positive temperature', () => {
    expect(() => new TemperatureProcessor(0)).toThrow(RangeError);
  });
});

describe('TopKProcessor', () => {
  it('keeps exactly the k highest logits', () => {
    const l = row(0.1, 5, -1, 3, 4, 2);
    new TopKProcessor(3).process(l);
    expect([...l]).toEqual([-Infinity, 5, -Infinity, 3, 4, -Infinity]);
  });

  it('keeps every token tied with the k-th value (vLLM masks logit < kth)', () => {
    const l = row(1, 2, 2, 3, 2, 0);
    new TopKProcessor(2).process(l);
    expect(kept(l)).toEqual([1, 2, 3, 4]);
  });

  it('is disabled by k <= 0 and k >= vocabulary size', () => {
    for (const k of [-1, 0, 4, 10]) {
      const l = row(1, 2, 3, 4);
      new TopKProcessor(k).process(l);
      expect([...l]).toEqual([1, 2, 3, 4]);
    }
  });

  it('matches a full sort on a large random row', () => {
    const n = 50_000;
    const l = new Float32Array(n);
    let x = 12345;
    for (let i = 0; i < n; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      l[i] = (x / 2 ** 32) * 20 - 10;
    }
    const expected = [...l].map((v, i) => [v, i] as const).sort((a, b) => b[0] - a[0]).slice(0, 40);
    new TopKProcessor(40).process(l);
    expect(kept(l)).toEqual(expected.map(([, i]) => i).sort((a, b) => a - b));
  });
});

describe('TopPProcessor', () => {
  // probabilities 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.4
  const weights = [1, 2, 3, 4, 6, 8, 16];

  it('keeps the smallest head of the ranking whose mass reaches top_p', () => {
    // Mass above each token, by rank: 16→0, 8→.4, 6→.6, 4→.75, 3→.85, ...
    const cases: [number, number[]][] = [
      [0.3, [6]], // .4 alone already reaches .3
      [0.5, [5, 6]], // .4 < .5 so 8 joins; .6 >= .5 stops 6
      [0.7, [4, 5, 6]],
      [0.8, [3, 4, 5, 6]],
      [0.99, [0, 1, 2, 3, 4, 5, 6]],
    ];
    for (const [topP, expected] of cases) {
      const l = logitsFromWeights(weights);
      new TopPProcessor(topP).process(l);
      expect(kept(l), `top_p=${topP}`).toEqual(expected);
    }
  });

  it('keeps kept logits unchanged', () => {
    const l = logitsFromWeights(weights);
    const before = l.slice();
    new TopPProcessor(0.5).process(l);
    expect(l[5]).toBe(before[5]);
    expect(l[6]).toBe(before[6]);
  });

  it('always keeps the top token, even for a tiny top_p', () => {
    const l = logitsFromWeights(weights);
    new TopPProcessor(1e-9).process(l);
    expect(kept(l)).toEqual([6]);
  });

  it('ranks ties by lower token id first', () => {
    // Four equal tokens at .25 each: top_p=.5 needs exactly two of them.
    const l = row(0, 0, 0, 0);
    new TopPProcessor(0.5).process(l);
    expect(kept(l)).toEqual([0, 1]);
  });

  it('is disabled by top_p = 1', () => {
    const l = logitsFromWeights(weights);
    const before = [...l];
    new TopPProcessor(1).process(l);
    expect([...l]).toEqual(before);
  });

  it('handles a flat distribution whose nucleus is thousands of tokens', () => {
    // 10,000 equal tokens: top_p=.5 needs 5,000 of them, far past the first window.
    const n = 10_000;
    const l = new Float32Array(n);
    new TopPProcessor(0.5).process(l);
    const survivors = kept(l);
    expect(survivors.length).toBe(5_000);
    expect(survivors[0]).toBe(0);
    expect(survivors[4_999]).toBe(4_999);
  });

  it('ignores tokens already banned', () => {
    const l = row(-Infinity, Math.log(3), Math.log(1), -Infinity);
    new TopPProcessor(0.7).process(l); // 3/4 = .75 >= .7: only token 1
    expect(kept(l)).toEqual([1]);
  });
});

describe('MinPProcessor', () => {
  it('drops tokens below min_p times the top probability', () => {
    // p = .025 .05 .075 .1 .15 .2 .4 ; min_p=.2 → threshold .08
    const l = logitsFromWeights([1, 2, 3, 4, 6, 8, 16]);
    new MinPProcessor(0.2).process(l);
    expect(kept(l)).toEqual([3, 4, 5, 6]);
  });

  it('uses the maximum of the current row, whatever its scale', () => {
    // probabilities relative to the top: e^-1 ≈ .37, e^-2 ≈ .135, e^-3 ≈ .05
    const l = row(10, 9, 8, 7);
    new MinPProcessor(0.1).process(l);
    expect(kept(l)).toEqual([0, 1, 2]);
  });

  it('is disabled by min_p = 0', () => {
    const l = row(10, -10, -100);
    new MinPProcessor(0).process(l);
    expect([...l]).toEqual([10, -10, -100]);
  });
});
