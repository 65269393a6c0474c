import { afterAll, describe, expect, it } from 'vitest';
import type { Engine, GenerationDelta } from '../../src/engine/types.js';
import type { TokenLogprob } from '../../src/sampling/logprobs.js';
import { defaultSamplingParams, type SamplingParams } from '../../src/sampling/params.js';
import { embeddedEngine, golden } from '../helpers/model.js';

interface Output {
  index: number;
  tokenIds: number[];
  logprobs: number[];
  topLogprobs: TokenLogprob[][];
  text: string;
  cumulative: number;
  finishReason: string | null;
  deltas: GenerationDelta[];
}

async function run(engine: Engine, promptTokenIds: number[], params: Partial<SamplingParams>): Promise<Output[]> {
  const outputs = new Map<number, Output>();
  for await (const delta of engine.generate({ promptTokenIds, params: defaultSamplingParams(params) })) {
    let output = outputs.get(delta.index);
    if (!output) {
      output = { index: delta.index, tokenIds: [], logprobs: [], topLogprobs: [], text: '', cumulative: NaN, finishReason: null, deltas: [] };
      outputs.set(delta.index, output);
    }
    output.tokenIds.push(...delta.tokenIds);
    output.logprobs.push(...delta.logprobs);
    output.topLogprobs.push(...(delta.topLogprobs ?? []));
    output.text += delta.text;
    output.cumulative = delta.cumulativeLogprob ?? NaN;
    output.finishReason = delta.finishReason ?? output.finishReason;
    output.deltas.push(delta);
  }
  return [...outputs.values()].sort((a, b) => a.index - b.index);
}

/**
 * The model's own log-softmax at each position of `tokens` after `prompt`, from one
 * separate forward pass over the whole text (prompt logprobs of a prefill, no KV cache,
 * no batching): row i is the distribution the i-th generated token was drawn from.
 */
async function recomputed(engine: Engine, prompt: number[], tokens: number[], k: number) {
  const [output] = await run(engine, [...prompt, ...tokens], { temperature: 0, maxTokens: 1, promptLogprobs: k });
  return output.deltas[0].promptLogprobs!.slice(prompt.length);
}

afterAll(async () => {
  await (await embeddedEngine('native')).dispose();
});

describe('n sequences from one request (real model)', () => {
  it('returns n different sequences, reproducible with a seed, from one prefill', async () => {
    const engine = await embeddedEngine('native');
    const params = { n: 4, temperature: 1, seed: 2024n, maxTokens: 24, ignoreEos: true };
    const steps = engine.stats().steps;
    const first = await run(engine, golden.prompt_ids, params);
    // One prefill plus one decode step per further token, whatever n is.
    expect(engine.stats().steps - steps).toBe(24);
    const again = await run(engine, golden.prompt_ids, params);
    expect(first.map((o) => o.index)).toEqual([0, 1, 2, 3]);
    expect(again.map((o) => o.tokenIds)).toEqual(first.map((o) => o.tokenIds));
    expect(new Set(first.map((o) => o.tokenIds.join(','))).size).toBe(4);
    expect(first.every((o) => o.tokenIds.length === 24 && o.finishReason === 'length')).toBe(true);
  });

  it('reports logprobs equal to a separate forward pass, summing to the cumulative logprob', async () => {
    const engine = await embeddedEngine('native');
    const outputs = await run(engine, golden.prompt_ids, { n: 3, temperature: 1, seed: 99n, maxTokens: 12, logprobs: 5, ignoreEos: true });
    for (const output of outputs) {
      const reference = await recomputed(engine, golden.prompt_ids, output.tokenIds, 5);
      output.tokenIds.forEach((token, i) => {
        expect(reference[i]!.tokenId).toBe(token);
        // Temperature 1 and no filter or penalty: the sampled distribution is the model's.
        expect(output.logprobs[i]).toBeCloseTo(reference[i]!.logprob, 4);
        expect(output.topLogprobs[i].map((t) => t.tokenId)).toEqual(reference[i]!.top.map((t) => t.tokenId));
        output.topLogprobs[i].forEach((t, j) => expect(t.logprob).toBeCloseTo(reference[i]!.top[j].logprob, 4));
      });
      expect(output.cumulative).toBeCloseTo(output.logprobs.reduce((a, b) => a + b, 0), 4);
    }
  });

  it('with best_of > n returns the n highest-scoring of the best_of candidates', async () => {
    const engine = await embeddedEngine('native');
    const params = { temperature: 1, seed: 31n, maxTokens: 16 };
    // Sequence i draws with the same derived seed whatever n and best_of are: the
    // candidates of best_of = 6 are the six sequences of n = 6.
    const candidates = await run(engine, golden.prompt_ids, { ...params, n: 6 });
    const best = await run(engine, golden.prompt_ids, { ...params, n: 2, bestOf: 6 });
    for (const output of [...candidates, ...best]) {
      expect(output.cumulative).toBeCloseTo(output.logprobs.reduce((a, b) => a + b, 0), 4);
    }
    const ranked = [...candidates].sort((a, b) => b.cumulative - a.cumulative);
    expect(best.map((o) => o.tokenIds)).toEqual(ranked.slice(0, 2).map((o) => o.tokenIds));
    expect(best.map((o) => o.text)).toEqual(ranked.slice(0, 2).map((o) => o.text));
    expect(best.map((o) => o.index)).toEqual([0, 1]);
  });

  it('attaches the prompt logprobs (raw model distribution) to the first delta of each sequence', async () => {
    const engine = await embeddedEngine('native');
    const outputs = await run(engine, golden.prompt_ids, { n: 2, temperature: 0.8, seed: 3n, maxTokens: 3, promptLogprobs: 2 });
    const reference = await recomputed(engine, golden.prompt_ids.slice(0, 1), golden.prompt_ids.slice(1), 2);
    for (const output of outputs) {
      const prompt = output.deltas[0].promptLogprobs!;
      expect(prompt).toHaveLength(golden.prompt_ids.length);
      expect(prompt[0]).toBeNull();
      prompt.slice(1).forEach((entry, i) => {
        expect(entry!.tokenId).toBe(golden.prompt_ids[i + 1]);
        expect(entry!.logprob).toBeCloseTo(reference[i]!.logprob, 4);
        expect(entry!.rank).toBeGreaterThanOrEqual(1);
        expect(entry!.top).toHaveLength(2);
      });
      expect(output.deltas.slice(1).every((d) => d.promptLogprobs === undefined)).toBe(true);
    }
  });
});

describe('ending requests with several sequences', () => {
  it('ends every sequence of an aborted request and keeps serving others', async () => {
    const engine = await embeddedEngine('native');
    for (const params of [
      { n: 3, temperature: 1, seed: 1n },
      { n: 2, bestOf: 4, temperature: 1, seed: 1n },
      { n: 2, bestOf: 2, useBeamSearch: true, temperature: 0 },
    ]) {
      const controller = new AbortController();
      const last = new Map<number, GenerationDelta>();
      const stream = engine.generate({
        promptTokenIds: golden.prompt_ids,
        params: defaultSamplingParams({ ...params, maxTokens: 400, ignoreEos: true }),
        signal: controller.signal,
      });
      setTimeout(() => controller.abort(), 20);
      for await (const delta of stream) last.set(delta.index, delta);
      expect([...last.keys()].sort()).toEqual(Array.from({ length: params.n }, (_, i) => i));
      expect([...last.values()].every((delta) => delta.finishReason === 'abort')).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(engine.stats().running).toBe(0);
    }
    const [after] = await run(engine, golden.prompt_ids, { temperature: 0, maxTokens: 5 });
    expect(after.tokenIds).toEqual(golden.completion_ids.slice(0, 5));
  });

  it('runs a request wider than the batch limit when the engine is idle', async () => {
    const { createNodeEngine } = await import('../../src/runtime/node/engine.js');
    const { MODEL_DIR } = await import('../helpers/model.js');
    const small = await createNodeEngine({ modelDir: MODEL_DIR, limits: { maxRunningSequences: 2 } });
    try {
      const outputs = await run(small, golden.prompt_ids, { n: 5, temperature: 1, seed: 4n, maxTokens: 6 });
      expect(outputs).toHaveLength(5);
    } finally {
      await small.dispose();
    }
  });
});

describe('beam search (real model)', () => {
  /** The model's 20 best next tokens after `prefix`, by a one-token greedy request. */
  async function nextTokens(engine: Engine, prefix: number[]): Promise<TokenLogprob[]> {
    const [output] = await run(engine, prefix, { temperature: 0, maxTokens: 1, logprobs: 20 });
    return output.topLogprobs[0];
  }

  /**
   * vLLM 0.6's beam search over the model's single-step predictions (no EOS within the
   * short horizon is assumed and checked): 2·width candidates per step, best width go on.
   */
  async function referenceBeams(engine: Engine, prompt: number[], width: number, maxTokens: number) {
    let live = [{ tokens: [] as number[], cum: 0 }];
    for (let step = 1; step <= maxTokens; step++) {
      const candidates: Array<{ tokens: number[]; cum: number; order: number }> = [];
      for (const [b, beam] of live.entries()) {
        const next = await nextTokens(engine, [...prompt, ...beam.tokens]);
        next.forEach((t, rank) => candidates.push({ tokens: [...beam.tokens, t.tokenId], cum: beam.cum + t.logprob, order: b * 100 + rank }));
      }
      candidates.sort((x, y) => y.cum - x.cum || x.order - y.order);
      const kept = candidates.slice(0, 2 * width);
      expect(kept.some((c) => engine.tokenizer.eosTokenIds.includes(c.tokens.at(-1)!))).toBe(false);
      // At the last step every candidate ends (max_tokens) and the best `width` are kept.
      live = kept.slice(0, width);
    }
    return live;
  }

  it.each([
    [2, 2],
    [3, 3],
  ])('width %i over %i tokens equals the search recomputed from single-step predictions', async (width, maxTokens) => {
    const engine = await embeddedEngine('native');
    const beams = await run(engine, golden.prompt_ids, { temperature: 0, n: width, bestOf: width, useBeamSearch: true, maxTokens });
    const reference = await referenceBeams(engine, golden.prompt_ids, width, maxTokens);
    expect(beams.map((b) => b.tokenIds)).toEqual(reference.map((r) => r.tokens));
    beams.forEach((beam, i) => {
      expect(beam.cumulative).toBeCloseTo(reference[i].cum, 3);
      expect(beam.logprobs.reduce((a, b) => a + b, 0)).toBeCloseTo(beam.cumulative, 4);
      expect(beam.text).toBe(engine.tokenizer.decode([...golden.prompt_ids, ...beam.tokenIds]).slice(golden.prompt.length));
      expect(beam.finishReason).toBe('length');
    });
    expect(new Set(beams.map((b) => b.tokenIds.join(','))).size).toBe(width);
  });

  it('ranks the returned beams by cumulative logprob / length^length_penalty', async () => {
    const engine = await embeddedEngine('native');
    const prompt = engine.tokenizer.encode('The little dog', { addSpecialTokens: true });
    for (const lengthPenalty of [0.2, 1, 3]) {
      const beams = await run(engine, prompt, { temperature: 0, n: 4, bestOf: 4, useBeamSearch: true, maxTokens: 30, lengthPenalty });
      const eos = engine.tokenizer.eosTokenIds;
      const score = (b: Output) =>
        b.cumulative / (prompt.length + b.tokenIds.length - (eos.includes(b.tokenIds.at(-1)!) ? 1 : 0)) ** lengthPenalty;
      for (let i = 1; i < beams.length; i++) expect(score(beams[i - 1])).toBeGreaterThanOrEqual(score(beams[i]));
      expect(new Set(beams.map((b) => b.tokenIds.join(','))).size).toBe(beams.length);
    }
  });

  it('gives the same beams while other requests share the batch', async () => {
    const engine = await embeddedEngine('native');
    const params = { temperature: 0, n: 3, bestOf: 3, useBeamSearch: true, maxTokens: 12 };
    const alone = await run(engine, golden.prompt_ids, params);
    const others = ['Tom had a red ball', 'One day, a cat'].map((text) => engine.tokenizer.encode(text, { addSpecialTokens: true }));
    const [together, ...rest] = await Promise.all([
      run(engine, golden.prompt_ids, params),
      ...others.map((prompt) => run(engine, prompt, { temperature: 0, maxTokens: 20, ignoreEos: true })),
    ]);
    expect(together.map((b) => b.tokenIds)).toEqual(alone.map((b) => b.tokenIds));
    for (const [i, prompt] of others.entries()) {
      const solo = await run(engine, prompt, { temperature: 0, maxTokens: 20, ignoreEos: true });
      expect(rest[i][0].tokenIds).toEqual(solo[0].tokenIds);
    }
    // Finished rows leave the batch at the loop's next turn.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(engine.stats().running).toBe(0);
  });
});
