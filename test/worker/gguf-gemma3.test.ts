/**
 * A gemma3 GGUF served by the Worker inside workerd (src/runtime/worker/gguf.ts's engine, the
 * bytes as a Data module), against transformers' Gemma3ForCausalLM on the same weights
 * (test/fixtures/gguf/tiny-gemma3-reference.json, scripts/gguf/make_gemma3_fixtures.py): the
 * greedy continuation past the sliding window is transformers' own, alone and batched.
 */
import { describe, expect, it } from 'vitest';
import { createWorkerHandler } from '../../src/runtime/worker/handler.js';
import { workerGgufEngine } from '../../src/runtime/worker/gguf-engine.js';
import gemma3 from '../fixtures/gguf/tiny-gemma3.gguf';
import reference from '../fixtures/gguf/tiny-gemma3-reference.json';
import { postJson, workerEnv } from './helpers.js';

const FILE = 'tiny-gemma3.gguf';
const worker = createWorkerHandler(workerGgufEngine({ name: FILE, bytes: gemma3 }), FILE);
const env = workerEnv({ SERVED_MODEL_NAME: '' });
const generations = (reference as { generations: Array<{ prompt_ids: number[]; greedy_ids: number[] }> }).generations;

async function inWorker(path: string, body: unknown): Promise<any> {
  const response = await postJson(worker, env, path, body);
  expect(response.status).toBe(200);
  return response.json();
}

describe('a bundled gemma3 GGUF in workerd against transformers', () => {
  it("continues greedily as transformers does, alone and batched", async () => {
    const expected: string[] = [];
    for (const { greedy_ids: ids } of generations) expected.push((await inWorker('/detokenize', { model: FILE, tokens: ids })).prompt);
    const ask = (promptIds: number[], count: number) => inWorker('/v1/completions', { model: FILE, prompt: promptIds, max_tokens: count, temperature: 0 });
    const alone: string[] = [];
    for (const { prompt_ids: promptIds, greedy_ids: ids } of generations) alone.push((await ask(promptIds, ids.length)).choices[0].text);
    expect(alone).toEqual(expected);
    const batched = await Promise.all(generations.map(async ({ prompt_ids: promptIds, greedy_ids: ids }) => (await ask(promptIds, ids.length)).choices[0].text));
    expect(batched).toEqual(expected);
  }, 120_000);
});
