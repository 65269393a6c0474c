/**
 * Speculative decoding (prompt lookup) on the real model: the same output as plain
 * decoding, token for token, in fewer steps when the text repeats itself.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { compileGuide } from '../../src/guided/compile-guide.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import type { SamplingParams } from '../../src/sampling/params.js';
import { collectGeneration, golden, MODEL_DIR } from '../helpers/model.js';

const plain = createNodeEngine({ modelDir: MODEL_DIR, limits: { speculativeDecoding: 'off' } });
const speculative = createNodeEngine({ modelDir: MODEL_DIR, limits: { speculativeDecoding: 'all', numSpeculativeTokens: 4, speculativeMaxSequences: 4 } });

afterAll(async () => {
  await Promise.all([(await plain).dispose(), (await speculative).dispose()]);
});

/** JSON whose keys repeat: guesses hold often. */
const PEOPLE_SCHEMA = {
  type: 'array',
  minItems: 3,
  maxItems: 3,
  items: { type: 'object', properties: { name: { type: 'string', maxLength: 8 }, age: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['name', 'age'], additionalProperties: false },
};

const PROMPTS = ['Once upon a time', 'Tom had a red ball. Tom had a red ball. Tom had a red', 'Lily wanted to', 'The dog said'];

/** Runs `prompts` concurrently on `engine` (one batch); returns the results and the steps it took. */
async function runAll(engine: LocalEngine, prompts: string[], params: Partial<SamplingParams>) {
  const before = engine.stats().steps;
  const results = await Promise.all(prompts.map((prompt) => collectGeneration(engine, engine.tokenizer.encode(prompt), params)));
  return { results, steps: engine.stats().steps - before };
}

describe('speculative decoding', () => {
  it('reproduces the reference greedy output of the model', async () => {
    const engine = await speculative;
    const { tokenIds } = await collectGeneration(engine, golden.prompt_ids, { temperature: 0, maxTokens: golden.completion_ids.length });
    expect(tokenIds).toEqual(golden.completion_ids);
  });

  it('gives each greedy request exactly the plain output, in fewer steps on repetitive text', async () => {
    const params = { temperature: 0, maxTokens: 120, ignoreEos: true, logprobs: 2 };
    let plainSteps = 0;
    let speculativeSteps = 0;
    for (const prompt of PROMPTS) {
      const expected = await runAll(await plain, [prompt], params);
      const actual = await runAll(await speculative, [prompt], params);
      plainSteps += expected.steps;
      speculativeSteps += actual.steps;
      const [want] = expected.results;
      const [got] = actual.results;
      expect(got.tokenIds).toEqual(want.tokenIds);
      expect(got.text).toBe(want.text);
      expect(got.finishReason).toBe('length');
      // One delta per step: the tokens a step accepted arrive together.
      expect(got.deltas).toHaveLength(actual.steps);
      expect(want.deltas).toHaveLength(expected.steps);
      // Logprobs come from a multi-token forward pass: equal up to float rounding.
      const gotLogprobs = got.deltas.flatMap((d) => d.logprobs);
      want.deltas.flatMap((d) => d.logprobs).forEach((logprob, i) => expect(gotLogprobs[i]).toBeCloseTo(logprob, 4));
      expect(got.deltas.flatMap((d) => d.topLogprobs ?? []).map((top) => top.map((t) => t.tokenId))).toEqual(
        want.deltas.flatMap((d) => d.topLogprobs ?? []).map((top) => top.map((t) => t.tokenId)),
      );
    }
    expect(speculativeSteps).toBeLessThan(plainSteps * 0.9);
  });

  it('keeps seeded sampling, penalties, n > 1, stop strings and max_tokens exactly as without guesses, in a shared batch', async () => {
    const cases: Array<Partial<SamplingParams>> = [
      { temperature: 0.7, topP: 0.9, seed: 11n, maxTokens: 60, ignoreEos: true },
      { temperature: 0, repetitionPenalty: 1.2, maxTokens: 45 },
      { temperature: 1, topK: 20, seed: 5n, n: 2, maxTokens: 30 },
      { temperature: 0, stop: ['ball'], maxTokens: 100 },
      { temperature: 0, maxTokens: 3 },
    ];
    for (const params of cases) {
      const expected = await runAll(await plain, PROMPTS, params);
      const actual = await runAll(await speculative, PROMPTS, params);
      // Per sequence of each request: its tokens, text and how it ended (a speculative step
      // sends a sequence's tokens of one step as one delta, so deltas differ in number).
      const shape = (run: typeof expected) =>
        run.results.map((r) => {
          const indexes = [...new Set(r.deltas.map((d) => d.index))].sort();
          return indexes.map((index) => {
            const own = r.deltas.filter((d) => d.index === index);
            const last = own[own.length - 1];
            return { tokens: own.flatMap((d) => d.tokenIds), text: own.map((d) => d.text).join(''), finish: last.finishReason, stop: last.stopReason };
          });
        });
      expect(shape(actual)).toEqual(shape(expected));
    }
  });

  it('follows a grammar exactly as without guesses (JSON repeats its keys, so guesses happen)', async () => {
    const guide = await compileGuide({ kind: 'json', schema: PEOPLE_SCHEMA }, (await plain).tokenizer);
    for (const params of [
      { temperature: 0, maxTokens: 150, guide },
      { temperature: 1, seed: 3n, maxTokens: 150, guide },
    ]) {
      const expected = await runAll(await plain, ['Once upon a time'], params);
      const actual = await runAll(await speculative, ['Once upon a time'], params);
      expect(actual.results[0].text).toBe(expected.results[0].text);
      expect(actual.results[0].finishReason).toBe('stop');
      expect(() => JSON.parse(actual.results[0].text)).not.toThrow();
      expect(actual.steps).toBeLessThan(expected.steps);
    }
  });

  it('speculates only while the batch is small', async () => {
    const engine = await createNodeEngine({ modelDir: MODEL_DIR, limits: { speculativeDecoding: 'all', numSpeculativeTokens: 4, speculativeMaxSequences: 1 } });
    try {
      const prompt = PROMPTS[1];
      const params = { temperature: 0, maxTokens: 80, ignoreEos: true };
      const alone = await runAll(engine, [prompt], params);
      const together = await runAll(engine, [prompt, prompt], params);
      expect(together.results[0].tokenIds).toEqual(alone.results[0].tokenIds);
      expect(alone.steps).toBeLessThan(80);
      // Two rows exceed the limit: one plain step per token, plus the prefills: one call for
      // both prompts when they wait together, two when the first starts an idle engine alone.
      expect(together.steps).toBeGreaterThanOrEqual(80 - 1 + 1);
      expect(together.steps).toBeLessThanOrEqual(80 - 1 + 2);
    } finally {
      await engine.dispose();
    }
  });

  it('by default speculates for structured-output requests only', async () => {
    const engine = await createNodeEngine({ modelDir: MODEL_DIR });
    try {
      const free = { temperature: 0, maxTokens: 80, ignoreEos: true };
      expect((await runAll(engine, [PROMPTS[1]], free)).steps).toBe(80);
      const guide = await compileGuide({ kind: 'json', schema: PEOPLE_SCHEMA }, engine.tokenizer);
      const guided = await runAll(engine, ['Once upon a time'], { temperature: 0, maxTokens: 150, guide });
      const expected = await runAll(await plain, ['Once upon a time'], { temperature: 0, maxTokens: 150, guide });
      expect(guided.results[0].text).toBe(expected.results[0].text);
      expect(guided.steps).toBeLessThan(expected.steps);
    } finally {
      await engine.dispose();
    }
  });
});
