/**
 * The engine with LoRA adapters from PEFT folders on disk: greedy output with an adapter is
 * the llama2.c reference's greedy output for the merged checkpoint, and requests for the
 * base model and several adapters running together (more adapters than slots) each get
 * exactly their solo output, in fewer model calls than one at a time.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { readAdapterDir } from '../../src/runtime/node/adapters.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import { referenceGreedyIds } from '../convert/llama2c-reference.js';
import { loadSharedCheckpoint } from '../convert/model-paths.js';
import { golden, MODEL_DIR } from '../helpers/model.js';
import { mergeAdapter, randomAdapter, writeAdapterDir, type RandomAdapter } from '../helpers/lora-fixtures.js';

let ckpt: DecoderCheckpoint;
let dir: string;
let engine: LocalEngine;
const adapters: Record<string, RandomAdapter> = {};

beforeAll(async () => {
  ckpt = await loadSharedCheckpoint();
  dir = await mkdtemp(join(tmpdir(), 'lora-engine-'));
  adapters.story = randomAdapter(ckpt, { seed: 31, rank: 8, alpha: 16 });
  adapters.tale = randomAdapter(ckpt, { seed: 32, rank: 4, alpha: 8, rslora: true, dtype: 'F16', targets: ['q_proj', 'v_proj', 'down_proj'] });
  adapters.fable = randomAdapter(ckpt, { seed: 33, rank: 16, alpha: 16, dtype: 'BF16', targets: ['o_proj', 'up_proj'] });
  const modules = [];
  for (const [name, adapter] of Object.entries(adapters)) modules.push({ name, path: await writeAdapterDir(join(dir, name), adapter) });
  engine = await createNodeEngine({
    modelDir: MODEL_DIR,
    lora: { maxLoras: 2, maxLoraRank: 16, modules, reader: readAdapterDir, runtimeUpdates: false },
  });
});

afterAll(async () => {
  await engine?.dispose();
  await rm(dir, { recursive: true, force: true });
});

async function generate(prompt: number[], adapter: string | undefined, maxTokens = 24) {
  const tokenIds: number[] = [];
  const logprobs: number[] = [];
  // logprobs: 0 so greedy tokens carry their logprob (the engine skips it when nobody asks).
  const params = defaultSamplingParams({ temperature: 0, maxTokens, ignoreEos: true, logprobs: 0 });
  for await (const delta of engine.generate({ promptTokenIds: prompt, params, ...(adapter ? { adapter } : {}) })) {
    tokenIds.push(...delta.tokenIds);
    logprobs.push(...delta.logprobs);
  }
  return { tokenIds, logprobs };
}

describe('LoRA adapters in the engine', () => {
  it('greedy ids with an adapter equal the merged checkpoint on the llama2.c reference', async () => {
    for (const name of ['story', 'tale', 'fable']) {
      const { tokenIds } = await generate(golden.prompt_ids, name);
      expect(tokenIds, name).toEqual(referenceGreedyIds(mergeAdapter(ckpt, adapters[name]), golden.prompt_ids, 24));
    }
    const base = await generate(golden.prompt_ids, undefined);
    expect(base.tokenIds).toEqual(golden.completion_ids.slice(0, 24));
    const story = await generate(golden.prompt_ids, 'story');
    expect(story.tokenIds).not.toEqual(base.tokenIds);
  });

  it('base and three adapters (two slots) decoding together each equal their solo run', async () => {
    const other = golden.prompt_ids.slice(0, 3);
    const jobs: Array<[number[], string | undefined]> = [
      [golden.prompt_ids, undefined],
      [golden.prompt_ids, 'story'],
      [other, 'tale'],
      [golden.prompt_ids, 'fable'],
      [other, 'story'],
      [other, undefined],
    ];
    const solo: Array<{ tokenIds: number[]; logprobs: number[] }> = [];
    const stepsBefore = engine.stats().steps;
    for (const [prompt, adapter] of jobs) solo.push(await generate(prompt, adapter));
    const soloSteps = engine.stats().steps - stepsBefore;
    const together = engine.stats().steps;
    const batched = await Promise.all(jobs.map(([prompt, adapter]) => generate(prompt, adapter)));
    const batchedSteps = engine.stats().steps - together;
    batched.forEach((result, i) => {
      expect(result.tokenIds, `job ${i}`).toEqual(solo[i].tokenIds);
      result.logprobs.forEach((logprob, j) => expect(logprob).toBeCloseTo(solo[i].logprobs[j], 4));
    });
    expect(batchedSteps).toBeLessThan(soloSteps / 2);
  });

  it('lists its adapters and refuses a request naming another', () => {
    expect(engine.adapters!.list().map((a) => a.name)).toEqual(['story', 'tale', 'fable']);
    expect(() => engine.generate({ promptTokenIds: [1, 2], params: defaultSamplingParams({}), adapter: 'nope' })).toThrow(/`nope` does not exist/);
  });
});
