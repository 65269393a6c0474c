/**
 * GGUFs of the newer architectures served by the Worker inside workerd (src/runtime/worker/
 * gguf.ts's engine, the bytes as a Data module), against transformers on the same weights:
 * gemma3 (Gemma3ForCausalLM, continued past the sliding window: make_gemma3_fixtures.py) and
 * the mixtures of experts qwen3moe / qwen2moe (their experts in onnxruntime-web's MoE kernel:
 * make_moe_fixtures.py). Each reference JSON's greedy continuation is transformers' own; the
 * Worker's equals it, alone and batched.
 */
import { describe, expect, it } from 'vitest';
import { createWorkerHandler } from '../../src/runtime/worker/handler.js';
import { workerGgufEngine } from '../../src/runtime/worker/gguf-engine.js';
import gemma3 from '../fixtures/gguf/tiny-gemma3.gguf';
import gemma3Reference from '../fixtures/gguf/tiny-gemma3-reference.json';
import qwen3moe from '../fixtures/gguf/tiny-qwen3moe.gguf';
import qwen3moeReference from '../fixtures/gguf/tiny-qwen3moe-reference.json';
import qwen2moe from '../fixtures/gguf/tiny-qwen2moe.gguf';
import qwen2moeReference from '../fixtures/gguf/tiny-qwen2moe-reference.json';
import { postJson, workerEnv } from './helpers.js';

type Generations = Array<{ prompt_ids: number[]; greedy_ids: number[] }>;
const env = workerEnv({ SERVED_MODEL_NAME: '' });

describe.each([
  { file: 'tiny-gemma3.gguf', bytes: gemma3, reference: gemma3Reference },
  { file: 'tiny-qwen3moe.gguf', bytes: qwen3moe, reference: qwen3moeReference },
  { file: 'tiny-qwen2moe.gguf', bytes: qwen2moe, reference: qwen2moeReference },
])('the bundled $file in workerd against transformers', ({ file, bytes, reference }) => {
  const worker = createWorkerHandler(workerGgufEngine({ name: file, bytes }), file);
  const generations = (reference as unknown as { generations: Generations }).generations;

  async function inWorker(path: string, body: unknown): Promise<any> {
    const response = await postJson(worker, env, path, body);
    expect(response.status).toBe(200);
    return response.json();
  }

  it("continues greedily as transformers does, alone and batched", async () => {
    const expected: string[] = [];
    for (const { greedy_ids: ids } of generations) expected.push((await inWorker('/detokenize', { model: file, tokens: ids })).prompt);
    const ask = (promptIds: number[], count: number) => inWorker('/v1/completions', { model: file, prompt: promptIds, max_tokens: count, temperature: 0 });
    const alone: string[] = [];
    for (const { prompt_ids: promptIds, greedy_ids: ids } of generations) alone.push((await ask(promptIds, ids.length)).choices[0].text);
    expect(alone).toEqual(expected);
    const batched = await Promise.all(generations.map(async ({ prompt_ids: promptIds, greedy_ids: ids }) => (await ask(promptIds, ids.length)).choices[0].text));
    expect(batched).toEqual(expected);
  }, 120_000);
});
