/**
 * Worker mode (modelThread "worker"): the session and the KV cache live in a worker
 * thread. Every engine feature gives what main mode gives: greedy output token for
 * token (alone, batched, joining midway), n / best_of with seeds, beam search,
 * speculative decoding, LoRA adapters, a vision-language folder's inputs_embeds; abort
 * stops a generation and frees its rows; dispose ends the thread.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LocalEngine } from '../../../src/engine/local-engine.js';
import type { WorkerDecoder } from '../../../src/engine/model-thread/worker-decoder.js';
import { createApp } from '../../../src/http/app.js';
import { parseServerConfig } from '../../../src/config/server-config.js';
import { createNodeEngine } from '../../../src/runtime/node/engine.js';
import { readAdapterDir } from '../../../src/runtime/node/adapters.js';
import { referenceGreedyIds } from '../../convert/llama2c-reference.js';
import { loadSharedCheckpoint } from '../../convert/model-paths.js';
import { collectGeneration, collectJoiningMidway, generateUntilAborted, golden, MODEL_DIR } from '../../helpers/model.js';
import { defaultSamplingParams } from '../../../src/sampling/params.js';
import { mergeAdapter, randomAdapter, writeAdapterDir } from '../../helpers/lora-fixtures.js';
import { postJson } from '../../http/helpers.js';
import { imageDataUrl, reference, SMOLVLM_DIR } from '../../multimodal/fixtures.js';

let main: LocalEngine;
let worker: LocalEngine;

beforeAll(async () => {
  [main, worker] = await Promise.all([
    createNodeEngine({ modelDir: MODEL_DIR, modelThread: 'main' }),
    createNodeEngine({ modelDir: MODEL_DIR, modelThread: 'worker', limits: { speculativeDecoding: 'off' } }),
  ]);
});

afterAll(async () => {
  await Promise.all([main?.dispose(), worker?.dispose()]);
});

const greedy = { temperature: 0, maxTokens: 48, ignoreEos: true };
const prompts = [golden.prompt_ids, golden.prompt_ids.slice(0, 3), [1, 403, 407, 261, 378, 432, 383], [1, 300]];

describe('worker mode', () => {
  it('runs the model in a worker and gives the golden greedy output', async () => {
    expect(worker.loadReport.modelThread).toBe('worker');
    expect(main.loadReport.modelThread).toBe('main');
    const result = await collectGeneration(worker, golden.prompt_ids, { temperature: 0, maxTokens: golden.completion_ids.length });
    expect(result.tokenIds).toEqual(golden.completion_ids);
  });

  it('gives main mode’s greedy tokens, alone, all at once and joining midway', async () => {
    const solo: number[][] = [];
    for (const prompt of prompts) solo.push((await collectGeneration(main, prompt, greedy)).tokenIds);
    for (const [index, prompt] of prompts.entries()) {
      expect((await collectGeneration(worker, prompt, greedy)).tokenIds, `prompt ${index} alone`).toEqual(solo[index]);
    }
    const steps = worker.stats().steps;
    const together = await Promise.all(prompts.map((prompt) => collectGeneration(worker, prompt, greedy)));
    together.forEach((result, index) => expect(result.tokenIds, `prompt ${index} batched`).toEqual(solo[index]));
    // Batched: far fewer model calls than one request at a time (48 tokens each).
    expect(worker.stats().steps - steps).toBeLessThan(2 * 48);
    const joining = await collectJoiningMidway(worker, prompts, greedy);
    joining.forEach((result, index) => expect(result.tokenIds, `prompt ${index} joining`).toEqual(solo[index]));
  });

  it('n / best_of with a seed, and beam search, equal main mode', async () => {
    const sampled = { temperature: 0.8, seed: 7n, n: 3, bestOf: 4, maxTokens: 24, logprobs: 2 };
    const run = async (engine: LocalEngine, params: Record<string, unknown>) => {
      const bySequence = new Map<number, number[]>();
      const logprobs: number[] = [];
      for await (const delta of engine.generate({ promptTokenIds: golden.prompt_ids, params: defaultSamplingParams(params) })) {
        bySequence.set(delta.index, [...(bySequence.get(delta.index) ?? []), ...delta.tokenIds]);
        logprobs.push(...delta.logprobs);
      }
      return { sequences: [...bySequence.entries()].sort(([a], [b]) => a - b), logprobs };
    };
    const [mainSampled, workerSampled] = [await run(main, sampled), await run(worker, sampled)];
    expect(workerSampled.sequences).toEqual(mainSampled.sequences);
    expect(workerSampled.sequences).toHaveLength(3);
    workerSampled.logprobs.forEach((logprob, i) => expect(logprob).toBeCloseTo(mainSampled.logprobs[i], 4));
    const beams = { useBeamSearch: true, n: 2, bestOf: 3, temperature: 0, maxTokens: 16 };
    expect((await run(worker, beams)).sequences).toEqual((await run(main, beams)).sequences);
  });

  it('stops a generation on abort and serves the next request', async () => {
    const { tokens, finishReason } = await generateUntilAborted(worker, golden.prompt_ids);
    expect(tokens.length).toBeGreaterThanOrEqual(5);
    expect(tokens.length).toBeLessThan(400);
    expect(finishReason).toBe('abort');
    expect(worker.stats().running).toBe(0);
    const after = await collectGeneration(worker, golden.prompt_ids, { temperature: 0, maxTokens: 8 });
    expect(after.tokenIds).toEqual(golden.completion_ids.slice(0, 8));
    // Every cache the batch made is released in the worker once the step loop is idle.
    await vi.waitFor(() => expect(workerKv(worker).liveCaches).toBe(0));
  });
});

function workerDecoder(engine: LocalEngine): WorkerDecoder {
  return (engine as unknown as { decoder: WorkerDecoder }).decoder;
}

function workerKv(engine: LocalEngine) {
  return workerDecoder(engine).kv;
}

describe('worker mode with speculative decoding', () => {
  it('guesses in the worker and still gives main mode’s greedy tokens, in fewer steps', async () => {
    const speculative = await createNodeEngine({
      modelDir: MODEL_DIR,
      modelThread: 'worker',
      limits: { speculativeDecoding: 'all', numSpeculativeTokens: 4, speculativeMaxSequences: 4 },
    });
    try {
      // A repetitive prompt: prompt lookup guesses right often.
      const prompt = [...golden.prompt_ids, ...golden.completion_ids.slice(0, 40)];
      const expected = (await collectGeneration(main, prompt, greedy)).tokenIds;
      const plainSteps = worker.stats().steps;
      expect((await collectGeneration(worker, prompt, greedy)).tokenIds).toEqual(expected);
      const steps = speculative.stats().steps;
      expect((await collectGeneration(speculative, prompt, greedy)).tokenIds).toEqual(expected);
      expect(speculative.stats().steps - steps).toBeLessThan(worker.stats().steps - plainSteps);
      await vi.waitFor(() => expect(workerKv(speculative).liveCaches).toBe(0));
    } finally {
      await speculative.dispose();
    }
  });
});

describe('worker mode with LoRA adapters', () => {
  let dir: string;
  let engine: LocalEngine;
  let ckpt: Awaited<ReturnType<typeof loadSharedCheckpoint>>;
  const adapters: Record<string, ReturnType<typeof randomAdapter>> = {};
  beforeAll(async () => {
    ckpt = await loadSharedCheckpoint();
    dir = await mkdtemp(join(tmpdir(), 'worker-lora-'));
    adapters.story = randomAdapter(ckpt, { seed: 31, rank: 8, alpha: 16 });
    adapters.tale = randomAdapter(ckpt, { seed: 32, rank: 4, alpha: 8, targets: ['q_proj', 'v_proj', 'down_proj'] });
    adapters.fable = randomAdapter(ckpt, { seed: 33, rank: 16, alpha: 16, targets: ['o_proj', 'up_proj'] });
    const modules = [];
    for (const [name, adapter] of Object.entries(adapters)) modules.push({ name, path: await writeAdapterDir(join(dir, name), adapter) });
    engine = await createNodeEngine({
      modelDir: MODEL_DIR,
      modelThread: 'worker',
      lora: { maxLoras: 2, maxLoraRank: 16, modules, reader: readAdapterDir, runtimeUpdates: false },
    });
  });
  afterAll(async () => {
    await engine?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  const referenceGreedy = (name: string, prompt: readonly number[], count: number) => referenceGreedyIds(mergeAdapter(ckpt, adapters[name]), prompt, count);

  it('each adapter gives the merged checkpoint’s greedy ids, alone and mixed with others and the base model', async () => {
    const generate = async (prompt: number[], adapter?: string) => {
      const tokenIds: number[] = [];
      const params = defaultSamplingParams({ temperature: 0, maxTokens: 16, ignoreEos: true });
      for await (const delta of engine.generate({ promptTokenIds: prompt, params, ...(adapter ? { adapter } : {}) })) tokenIds.push(...delta.tokenIds);
      return tokenIds;
    };
    for (const name of Object.keys(adapters)) expect(await generate(golden.prompt_ids, name), name).toEqual(referenceGreedy(name, golden.prompt_ids, 16));
    const other = golden.prompt_ids.slice(0, 3);
    const jobs: Array<[number[], string | undefined]> = [
      [golden.prompt_ids, undefined],
      [golden.prompt_ids, 'story'],
      [other, 'tale'],
      [golden.prompt_ids, 'fable'],
      [other, 'story'],
    ];
    // Three adapters, two slots: a slot is rewritten while others run, and the worker's tables follow.
    const results = await Promise.all(jobs.map(([prompt, adapter]) => generate(prompt, adapter)));
    results.forEach((tokenIds, index) => {
      const [prompt, adapter] = jobs[index];
      expect(tokenIds, `job ${index}`).toEqual(adapter === undefined ? golden.completion_ids.slice(0, 16) : referenceGreedy(adapter, prompt, 16));
    });
  });
});

describe('worker mode with a vision-language folder (inputs_embeds)', () => {
  it('chat with an image equals the reference', async () => {
    const engine = await createNodeEngine({ modelDir: SMOLVLM_DIR, servedModelName: 'smolvlm', modelThread: 'worker' });
    try {
      const app = createApp({ engine, config: parseServerConfig({ modelDir: SMOLVLM_DIR, servedModelName: 'smolvlm' }) });
      const generation = reference('smolvlm').generations[0];
      const content = [...generation.images.map((name) => ({ type: 'image_url', image_url: { url: imageDataUrl(name) } })), { type: 'text', text: generation.question }];
      const res = await postJson(app, '/v1/chat/completions', { model: 'smolvlm', messages: [{ role: 'user', content }], max_tokens: generation.max_tokens, temperature: 0 });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
      expect(body.choices[0].message.content).toBe(generation.text);
    } finally {
      await engine.dispose();
    }
  });
});

describe('refusing what worker mode cannot do', () => {
  it('refuses a worker with the wasm backend at startup, saying why', async () => {
    await expect(createNodeEngine({ modelDir: MODEL_DIR, backend: 'wasm', modelThread: 'worker' })).rejects.toThrow(
      'modelThread "worker" needs the native backend (onnxruntime-node)',
    );
  });
});

describe('a model worker that dies', () => {
  it('fails the running request with the reason, the next ones too, and /health says so', async () => {
    const engine = await createNodeEngine({ modelDir: MODEL_DIR, modelThread: 'worker' });
    try {
      const thread = (workerDecoder(engine) as unknown as { worker: { terminate(): Promise<number> } }).worker;
      const params = defaultSamplingParams({ temperature: 0, maxTokens: 400, ignoreEos: true });
      const tokens: number[] = [];
      const running = (async () => {
        for await (const delta of engine.generate({ promptTokenIds: golden.prompt_ids, params })) {
          tokens.push(...delta.tokenIds);
          if (tokens.length === 3) void thread.terminate();
        }
      })();
      await expect(running).rejects.toThrow(/model worker has stopped/);
      expect(tokens.length).toBeLessThan(400);
      await expect(collectGeneration(engine, golden.prompt_ids, { temperature: 0, maxTokens: 4 })).rejects.toThrow(/model worker has stopped/);
      // A load balancer hears it: /health says 503 with the reason.
      const app = createApp({ engine, config: parseServerConfig({ modelDir: MODEL_DIR }) });
      const health = await app.request('/health');
      expect(health.status).toBe(503);
      expect(await health.text()).toMatch(/Unhealthy: the model worker has stopped/);
    } finally {
      await engine.dispose();
    }
  });
});

describe('disposing a worker-mode engine', () => {
  it('ends the worker thread; the decoder refuses further calls', async () => {
    const engine = await createNodeEngine({ modelDir: MODEL_DIR, modelThread: 'worker' });
    const decoder = workerDecoder(engine);
    await collectGeneration(engine, golden.prompt_ids, { temperature: 0, maxTokens: 4 });
    let exited = false;
    void decoder.exited.then(() => (exited = true));
    await engine.dispose();
    await decoder.exited;
    expect(exited).toBe(true);
    const past = { batch: 1, length: 0, heads: 1, headDim: 1, keys: [], values: [] };
    await expect(
      decoder.run({ batch: 1, seqLen: 1, inputIds: BigInt64Array.of(1n), positionIds: BigInt64Array.of(0n), attentionMask: BigInt64Array.of(1n), past }),
    ).rejects.toThrow(/model worker has stopped/);
  });
});

describe('worker mode and the in-place KV graph', () => {
  it('runs the folder’s in-place twin in the worker, which owns the cache: main mode’s greedy tokens alone, batched and joining', async () => {
    expect(worker.loadReport.file).toBe('onnx/model.inplace.onnx');
    expect(worker.loadReport.contract).toBe(main.loadReport.contract);
    expect(worker.loadReport.batching).toEqual(main.loadReport.batching);
    // Rows outgrowing the cache's slots (slotRoom's blocks of 64) make the worker grow its buffers mid-generation.
    const long = { temperature: 0, maxTokens: 150, ignoreEos: true };
    const solo: number[][] = [];
    for (const prompt of prompts) solo.push((await collectGeneration(main, prompt, long)).tokenIds);
    const together = await Promise.all(prompts.map((prompt) => collectGeneration(worker, prompt, long)));
    together.forEach((result, index) => expect(result.tokenIds, `prompt ${index} batched`).toEqual(solo[index]));
    const joining = await collectJoiningMidway(worker, [...prompts].reverse(), long);
    joining.forEach((result, index) => expect(result.tokenIds, `prompt ${index} joining`).toEqual(solo[prompts.length - 1 - index]));
    await vi.waitFor(() => expect(workerKv(worker).liveCaches).toBe(0));
  });

  it('serves the plain graph named explicitly in the worker too', async () => {
    const plain = await createNodeEngine({ modelDir: MODEL_DIR, modelFile: 'onnx/model.onnx', modelThread: 'worker' });
    try {
      expect(plain.loadReport.file).toBe('onnx/model.onnx');
      const greedy = { temperature: 0, maxTokens: 40, ignoreEos: true };
      expect((await collectGeneration(plain, golden.prompt_ids, greedy)).tokenIds).toEqual(golden.completion_ids.slice(0, 40));
    } finally {
      await plain.dispose();
    }
  });
});
