/**
 * Prefix caching (src/engine/prefix-cache/): a prompt starting with one the engine already
 * ran reuses that prompt's KV, and its greedy output is the output without reuse — alone,
 * and batched with requests joining a running batch — on every graph flavour the engine
 * serves: the converter's four (fused and gqa and portable with present.* outputs, inplace
 * with the engine-kept cache), a q4 graph, and the model worker's remote cache.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalEngine } from '../../../src/engine/local-engine.js';
import type { GenerationDelta } from '../../../src/engine/types.js';
import { defaultSamplingParams } from '../../../src/sampling/params.js';
import { createNodeEngine } from '../../../src/runtime/node/engine.js';
import { convertedFlavour, GRAPH_FLAVOURS, greedyRun, type GreedyRun as Run } from '../../helpers/graph-flavours.js';

const GREEDY = { temperature: 0, maxTokens: 16, ignoreEos: true };
const ids = (length: number, seed: number) => Array.from({ length }, (_, i) => 259 + ((seed * 31 + i * 17) % 253));
/** A "system prompt" three blocks long, then each request's own question. */
const SYSTEM = [1, ...ids(47, 1)];
const QUESTIONS = [ids(9, 2), ids(14, 3), ids(5, 4), ids(20, 5)];

const run = (engine: LocalEngine, prompt: number[], params: object = GREEDY): Promise<Run> => greedyRun(engine, prompt, params);

/** Every sequence's tokens, by index (n, best_of, beams). */
async function sequences(engine: LocalEngine, prompt: number[], params: object): Promise<number[][]> {
  const out: number[][] = [];
  for await (const delta of engine.generate({ promptTokenIds: prompt, params: defaultSamplingParams(params) }) as AsyncIterable<GenerationDelta>) {
    (out[delta.index] ??= []).push(...delta.tokenIds);
  }
  return out;
}

/** A chat of three turns: each prompt is the last one, its answer, and a new question. */
async function growingChat(engine: LocalEngine): Promise<Run[]> {
  const runs: Run[] = [];
  let prompt = [...SYSTEM, ...QUESTIONS[0]];
  for (let turn = 0; turn < 3; turn++) {
    const result = await run(engine, prompt);
    runs.push(result);
    prompt = [...prompt, ...result.tokenIds, ...QUESTIONS[turn + 1]];
  }
  return runs;
}

describe.each(GRAPH_FLAVOURS)('prefix caching on the $name graph', (flavour) => {
  let remove: () => Promise<void>;
  let cached: LocalEngine;
  let plain: LocalEngine;

  beforeAll(async () => {
    const converted = await convertedFlavour(flavour, 'prefix-cache-');
    remove = converted.remove;
    cached = await createNodeEngine(converted.engineOptions);
    plain = await createNodeEngine({ ...converted.engineOptions, limits: { enablePrefixCaching: false } });
  });

  afterAll(async () => {
    await cached?.dispose();
    await plain?.dispose();
    await remove?.();
  });

  it('is on by default and off with enablePrefixCaching false', () => {
    expect(cached.loadReport.prefixCaching).toEqual({ on: true });
    expect(plain.loadReport.prefixCaching).toEqual({ on: false, reason: 'the enable_prefix_caching setting is false' });
  });

  it("gives a growing chat's turns the output they get without reuse, reusing the earlier turns and their replies", async () => {
    const reused = await growingChat(cached);
    const recomputed = await growingChat(plain);
    expect(reused.map((turn) => turn.tokenIds)).toEqual(recomputed.map((turn) => turn.tokenIds));
    expect(recomputed.every((turn) => turn.cached === 0)).toBe(true);
    // Turn 2 starts with turn 1's prompt (56 tokens) and reply (16): the prompt and the reply's
    // tokens fed so far (at least its first 15; the last is fed only by a speculative step) are
    // kept when turn 1 ends, all reused, as llama.cpp's prompt cache reuses them (the prompt alone
    // would give 56). Turn 3: turn 2's prompt (86) and its reply likewise.
    expect(reused[1].cached).toBeGreaterThanOrEqual(56 + 15);
    expect(reused[1].cached).toBeLessThanOrEqual(56 + 16);
    expect(reused[2].cached).toBeGreaterThanOrEqual(86 + 15);
    expect(reused[2].cached).toBeLessThanOrEqual(86 + 16);
  });

  it('gives requests sharing a system prompt, arriving together and joining a running batch, their output without reuse', async () => {
    const prompts = QUESTIONS.map((question) => [...SYSTEM, ...question]);
    const alone: Run[] = [];
    for (const prompt of prompts) alone.push(await run(plain, prompt));
    // A different first request keeps the batch running while the others arrive.
    const long = run(cached, [1, ...ids(30, 9)], { ...GREEDY, maxTokens: 40 });
    await run(cached, prompts[0]!);
    const together = await Promise.all(prompts.map((prompt) => run(cached, prompt)));
    await long;
    expect(together.map((each) => each.tokenIds)).toEqual(alone.map((each) => each.tokenIds));
    // The first prompt ran before (all but its last token kept); the others share the system prompt.
    expect(together.map((each) => each.cached)).toEqual([SYSTEM.length + QUESTIONS[0]!.length - 1, SYSTEM.length, SYSTEM.length, SYSTEM.length]);
  });

  it('gives beam search and seeded n / best_of sequences their output without reuse', async () => {
    const prompt = [...SYSTEM, ...ids(11, 8)];
    const beams = { temperature: 0, maxTokens: 8, ignoreEos: true, useBeamSearch: true, n: 2, bestOf: 3 };
    const sampled = { temperature: 0.8, maxTokens: 8, ignoreEos: true, n: 2, bestOf: 3, seed: 11n };
    await run(cached, prompt);
    expect((await run(cached, prompt)).cached).toBe(prompt.length - 1);
    expect(await sequences(cached, prompt, beams)).toEqual(await sequences(plain, prompt, beams));
    expect(await sequences(cached, prompt, sampled)).toEqual(await sequences(plain, prompt, sampled));
  });
});
