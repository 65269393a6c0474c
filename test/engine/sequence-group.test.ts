import { describe, expect, it } from 'vitest';
import { SamplingGroup, sequenceSeed } from '../../src/engine/sequence-group.js';
import type { GenerationDelta } from '../../src/engine/types.js';
import { defaultSamplingParams, type SamplingParams } from '../../src/sampling/params.js';
import { logSoftmax, runToy, toyLimits, toyLogits, toyTokenizer } from './toy-model.js';

const PROMPT = [2, 5, 1];

interface Output {
  index: number;
  tokenIds: number[];
  logprobs: number[];
  cumulative: number;
  deltas: GenerationDelta[];
}

async function sample(params: Partial<SamplingParams>): Promise<{ outputs: Output[]; deltas: GenerationDelta[] }> {
  const group = new SamplingGroup(PROMPT, defaultSamplingParams({ maxTokens: 8, ignoreEos: true, ...params }), toyTokenizer, toyLimits());
  const deltas: GenerationDelta[] = [];
  const reading = (async () => {
    for await (const delta of group.deltas) deltas.push(delta);
  })();
  runToy(group, PROMPT, (history) => toyLogits(history));
  await reading;
  const outputs = new Map<number, Output>();
  for (const delta of deltas) {
    let output = outputs.get(delta.index);
    if (!output) outputs.set(delta.index, (output = { index: delta.index, tokenIds: [], logprobs: [], cumulative: NaN, deltas: [] }));
    output.tokenIds.push(...delta.tokenIds);
    output.logprobs.push(...delta.logprobs);
    output.cumulative = delta.cumulativeLogprob!;
    output.deltas.push(delta);
  }
  return { outputs: [...outputs.values()].sort((a, b) => a.index - b.index), deltas };
}

describe('n sequences by sampling', () => {
  it('returns n sequences that differ, reproducibly for a seed', async () => {
    const first = await sample({ n: 4, seed: 42n });
    const again = await sample({ n: 4, seed: 42n });
    expect(first.outputs.map((o) => o.index)).toEqual([0, 1, 2, 3]);
    expect(again.outputs.map((o) => o.tokenIds)).toEqual(first.outputs.map((o) => o.tokenIds));
    expect(new Set(first.outputs.map((o) => o.tokenIds.join(','))).size).toBeGreaterThan(1);
    const other = await sample({ n: 4, seed: 43n });
    expect(other.outputs.map((o) => o.tokenIds)).not.toEqual(first.outputs.map((o) => o.tokenIds));
  });

  it('samples the first sequence exactly as a single-sequence request with that seed', async () => {
    const single = await sample({ seed: 7n });
    const several = await sample({ n: 3, seed: 7n });
    expect(several.outputs[0].tokenIds).toEqual(single.outputs[0].tokenIds);
  });

  it('derives distinct per-sequence seeds, the first being the request seed', () => {
    expect(sequenceSeed(9n, 0)).toBe(9n);
    expect(sequenceSeed(undefined, 3)).toBeUndefined();
    const seeds = Array.from({ length: 16 }, (_, i) => sequenceSeed(9n, i));
    expect(new Set(seeds).size).toBe(16);
    expect(sequenceSeed(10n, 1)).not.toBe(sequenceSeed(9n, 1));
  });

  it('reports each token\'s logprob under the distribution it was drawn from, and their running sum', async () => {
    const { outputs } = await sample({ n: 3, seed: 5n, temperature: 1 });
    for (const output of outputs) {
      let history = [...PROMPT];
      output.tokenIds.forEach((token, i) => {
        expect(output.logprobs[i]).toBeCloseTo(logSoftmax(toyLogits(history))[token], 5);
        history = [...history, token];
      });
      expect(output.cumulative).toBeCloseTo(output.logprobs.reduce((a, b) => a + b, 0), 5);
    }
  });

  it('streams one delta per sequence per step, each sequence in index order within a step', async () => {
    const { deltas } = await sample({ n: 3, seed: 1n, maxTokens: 4 });
    expect(deltas.map((d) => d.index)).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]);
    expect(deltas.slice(-3).every((d) => d.finishReason === 'length')).toBe(true);
  });

  it('puts the prompt logprobs on the first delta of every sequence only', async () => {
    const { outputs } = await sample({ n: 2, seed: 1n, promptLogprobs: 2, maxTokens: 3 });
    for (const output of outputs) {
      const [first, ...rest] = output.deltas;
      expect(first.promptLogprobs).toHaveLength(PROMPT.length);
      expect(first.promptLogprobs![0]).toBeNull();
      expect(first.promptLogprobs![2]!.logprob).toBeCloseTo(logSoftmax(toyLogits(PROMPT.slice(0, 2)))[PROMPT[2]], 5);
      expect(rest.every((d) => d.promptLogprobs === undefined)).toBe(true);
    }
  });
});

describe('best_of > n', () => {
  it('returns, at the end, the n of best_of sequences with the highest cumulative logprob, re-indexed', async () => {
    const all = await sample({ n: 5, bestOf: 5, seed: 11n });
    const best = await sample({ n: 2, bestOf: 5, seed: 11n });
    // Same seed, same per-sequence seeds: the best_of candidates are the n = 5 sequences.
    const ranked = [...all.outputs].sort((a, b) => b.cumulative - a.cumulative);
    expect(best.outputs.map((o) => o.tokenIds)).toEqual(ranked.slice(0, 2).map((o) => o.tokenIds));
    expect(best.outputs.map((o) => o.index)).toEqual([0, 1]);
    // Buffered: one delta per returned sequence, emitted once every candidate finished.
    expect(best.deltas).toHaveLength(2);
    for (const output of best.outputs) {
      expect(output.cumulative).toBeCloseTo(output.logprobs.reduce((a, b) => a + b, 0), 5);
      expect(output.deltas[0].text).toBe(toyTokenizer.decode(output.tokenIds));
    }
  });
});
