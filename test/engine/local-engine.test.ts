import { afterAll, describe, expect, it } from 'vitest';
import type { GenerationDelta } from '../../src/engine/types.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import { collectGeneration, collectJoiningMidway, embeddedEngine, golden } from '../helpers/model.js';

const collect = collectGeneration;

const greedy = { temperature: 0, maxTokens: 100 };

afterAll(async () => {
  await (await embeddedEngine('native')).dispose();
  await (await embeddedEngine('wasm')).dispose();
});

describe.each(['native', 'wasm'] as const)('local engine on onnxruntime (%s)', (backend) => {
  it('reproduces the reference greedy continuation token for token', async () => {
    const engine = await embeddedEngine(backend);
    const out = await collect(engine, golden.prompt_ids, greedy);
    expect(out.tokenIds).toEqual(golden.completion_ids);
    expect(out.text).toBe(golden.completion_text);
    expect(out.finishReason).toBe('length');
    expect(out.deltas.every((d) => d.finishReason === null || d === out.deltas[out.deltas.length - 1])).toBe(true);
  });

  it('gives the same seeded sample on this backend as on native onnxruntime', async () => {
    const engine = await embeddedEngine(backend);
    const native = await embeddedEngine('native');
    const params = { temperature: 1, topP: 0.9, seed: 12345678901234567890n, maxTokens: 60 };
    const here = await collect(engine, golden.prompt_ids, params);
    const there = await collect(native, golden.prompt_ids, params);
    expect(here.tokenIds).toEqual(there.tokenIds);
    expect(here.tokenIds).not.toEqual(golden.completion_ids.slice(0, 60));
  });
});

describe('local engine behaviour', () => {
  it('decodes concurrent requests of different lengths in one batch with the same output as alone', async () => {
    const engine = await embeddedEngine('native');
    const tokenizer = engine.tokenizer;
    const prompts = ['Once upon a time', 'The dog', 'Lily and Tom went to the park to play with a big red ball. They'].map((p) =>
      tokenizer.encode(p),
    );
    const solo: Awaited<ReturnType<typeof collect>>[] = [];
    for (const prompt of prompts) solo.push(await collect(engine, prompt, { temperature: 0, maxTokens: 40, ignoreEos: true }));
    const stepsBefore = engine.stats().steps;
    // Staggered arrivals: later requests join a batch that is already decoding.
    const together = await collectJoiningMidway(engine, prompts, { temperature: 0, maxTokens: 40, ignoreEos: true });
    const steps = engine.stats().steps - stepsBefore;
    together.forEach((out, i) => expect(out.tokenIds).toEqual(solo[i].tokenIds));
    // Batched: far fewer model calls than 3 × 40 sequential steps.
    expect(steps).toBeLessThan(100);
  });

  it('ends at a stop string that spans tokens and leaves it out of the text', async () => {
    const engine = await embeddedEngine('native');
    // "Lily" in the golden text is split across tokens by this vocabulary.
    const out = await collect(engine, golden.prompt_ids, { ...greedy, stop: ['named Li'] });
    expect(out.finishReason).toBe('stop');
    expect(out.stopReason).toBe('named Li');
    expect(out.text).toBe(', there was a little girl ');
    const kept = await collect(engine, golden.prompt_ids, { ...greedy, stop: ['named Li'], includeStopStrInOutput: true });
    expect(kept.text).toBe(', there was a little girl named Li');
  });

  it('ends at a stop token id and reports it as the stop reason', async () => {
    const engine = await embeddedEngine('native');
    const stopId = golden.completion_ids[5];
    const out = await collect(engine, golden.prompt_ids, { ...greedy, stopTokenIds: [stopId] });
    expect(out.tokenIds).toEqual(golden.completion_ids.slice(0, 6));
    expect(out.finishReason).toBe('stop');
    expect(out.stopReason).toBe(stopId);
    // The stop token's own text is left out: the text is that of the five tokens before it.
    const textOf = (k: number) =>
      engine.tokenizer.decode([...golden.prompt_ids, ...golden.completion_ids.slice(0, k)]).slice(golden.prompt.length);
    expect(out.text).toBe(textOf(5));
    expect(textOf(6).length).toBeGreaterThan(textOf(5).length);
  });

  it('stops at max tokens with finish reason length', async () => {
    const engine = await embeddedEngine('native');
    const out = await collect(engine, golden.prompt_ids, { temperature: 0, maxTokens: 7 });
    expect(out.tokenIds).toEqual(golden.completion_ids.slice(0, 7));
    expect(out.finishReason).toBe('length');
  });

  it('stops at EOS unless ignore_eos, and not before min_tokens', async () => {
    const engine = await embeddedEngine('native');
    const eos = engine.spec.eosTokenIds;
    const free = await collect(engine, golden.prompt_ids, { temperature: 0, maxTokens: 400 });
    // The story model ends its story with an end token well within 400 tokens.
    expect(free.finishReason).toBe('stop');
    expect(free.stopReason).toBeNull();
    expect(eos).toContain(free.tokenIds[free.tokenIds.length - 1]);
    const ignoring = await collect(engine, golden.prompt_ids, { temperature: 0, maxTokens: free.tokenIds.length + 5, ignoreEos: true });
    expect(ignoring.tokenIds.length).toBe(free.tokenIds.length + 5);
    expect(ignoring.finishReason).toBe('length');
    const minimum = await collect(engine, golden.prompt_ids, { temperature: 0, maxTokens: 400, minTokens: free.tokenIds.length + 3 });
    expect(minimum.tokenIds.length).toBeGreaterThanOrEqual(free.tokenIds.length + 3);
    expect(minimum.tokenIds.slice(0, free.tokenIds.length - 1)).toEqual(free.tokenIds.slice(0, -1));
  });

  it('never exceeds the model context', async () => {
    const engine = await embeddedEngine('native');
    const prompt = engine.tokenizer.encode('Once upon a time '.repeat(200)).slice(0, 500);
    const out = await collect(engine, prompt, { temperature: 0, maxTokens: 100, ignoreEos: true });
    expect(prompt.length).toBe(500);
    expect(out.tokenIds.length).toBe(engine.info.maxModelLen - prompt.length);
    expect(out.finishReason).toBe('length');
  });

  it('stops stepping an aborted request and keeps serving others', async () => {
    const engine = await embeddedEngine('native');
    const controller = new AbortController();
    const deltas: GenerationDelta[] = [];
    const stream = engine.generate({
      promptTokenIds: golden.prompt_ids,
      params: defaultSamplingParams({ temperature: 0, maxTokens: 400, ignoreEos: true }),
      signal: controller.signal,
    });
    for await (const delta of stream) {
      deltas.push(delta);
      if (deltas.length === 3) controller.abort();
    }
    expect(deltas[deltas.length - 1].finishReason).toBe('abort');
    expect(deltas.length).toBeLessThan(10);
    expect(engine.stats().running).toBe(0);
    const other = await collect(engine, golden.prompt_ids, { temperature: 0, maxTokens: 5 });
    expect(other.tokenIds).toEqual(golden.completion_ids.slice(0, 5));
  });

  it('ends the sequence when its consumer stops reading', async () => {
    const engine = await embeddedEngine('native');
    let count = 0;
    for await (const delta of engine.generate({
      promptTokenIds: golden.prompt_ids,
      params: defaultSamplingParams({ temperature: 0, maxTokens: 400, ignoreEos: true }),
    })) {
      if (delta && ++count === 2) break;
    }
    const steps = engine.stats().steps;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(engine.stats().running).toBe(0);
    expect(engine.stats().steps - steps).toBeLessThanOrEqual(1);
  });

  it('refuses prompts it cannot run', async () => {
    const engine = await embeddedEngine('native');
    const run = (ids: number[]) => collect(engine, ids, { maxTokens: 2 });
    await expect(run([])).rejects.toThrow(/empty/);
    await expect(run([1, 99999])).rejects.toThrow(/out of vocabulary/);
    await expect(run(new Array(engine.info.maxModelLen).fill(5))).rejects.toThrow(/context/);
  });
});
