/**
 * LoRA on brought-model layouts (the bring-your-own-model fixtures: a qwen2-style config,
 * byte-level tokenizer, float16 KV cache, int32 ids, positions computed in the graph,
 * GroupQueryAttention wired as onnxruntime-genai wires it): greedy output with an adapter
 * equals the reference's for the merged checkpoint, alone and batched with a base request.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { readAdapterDir } from '../../src/runtime/node/adapters.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { referenceGreedyIds } from '../convert/llama2c-reference.js';
import { fixtureCheckpoint, removeFixtureFolders, writeFixtureFolder, type FixtureFolderOptions } from '../helpers/byom-fixtures.js';
import { mergeAdapter, randomAdapter, writeAdapterDir, type RandomAdapter } from '../helpers/lora-fixtures.js';

let dir: string;
let adapter: RandomAdapter;
let adapterPath: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lora-byom-'));
  adapter = randomAdapter(fixtureCheckpoint(), { seed: 77, rank: 4, alpha: 8, rslora: true, dtype: 'BF16', magnitude: 0.5 });
  adapterPath = await writeAdapterDir(join(dir, 'a'), adapter);
});

afterAll(async () => {
  await removeFixtureFolders();
  await rm(dir, { recursive: true, force: true });
});

async function run(engine: LocalEngine, prompt: number[], name?: string): Promise<number[]> {
  const ids: number[] = [];
  const params = defaultSamplingParams({ temperature: 0, maxTokens: 12, ignoreEos: true });
  for await (const delta of engine.generate({ promptTokenIds: prompt, params, ...(name ? { adapter: name } : {}) })) ids.push(...delta.tokenIds);
  return ids;
}

const layouts: Array<[string, FixtureFolderOptions]> = [
  ['float16 KV, int32 ids, positions from the mask', { layout: { kvType: 'float16', idsType: 'int32', positions: 'from-mask' } }],
  ['GroupQueryAttention (onnxruntime-genai wiring, right padding)', { graph: 'gqa-genai' }],
];

describe('LoRA on brought-model layouts', () => {
  for (const [label, options] of layouts) {
    it(label, async () => {
      const modelDir = await writeFixtureFolder(options);
      const engine = await createNodeEngine({
        modelDir,
        lora: { maxLoras: 2, maxLoraRank: 8, modules: [{ name: 'a', path: adapterPath }], reader: readAdapterDir, runtimeUpdates: false },
      });
      try {
        const prompt = [5, 70, 80, 90, 100];
        const short = [7, 8];
        const expected = referenceGreedyIds(mergeAdapter(fixtureCheckpoint(), adapter), prompt, 12);
        expect(await run(engine, prompt, 'a')).toEqual(expected);
        const [base, withAdapter, other] = await Promise.all([run(engine, prompt), run(engine, prompt, 'a'), run(engine, short, 'a')]);
        expect(base).toEqual(referenceGreedyIds(fixtureCheckpoint(), prompt, 12));
        expect(withAdapter).toEqual(expected);
        expect(other).toEqual(referenceGreedyIds(mergeAdapter(fixtureCheckpoint(), adapter), short, 12));
        expect(withAdapter).not.toEqual(base);
      } finally {
        await engine.dispose();
      }
    });
  }
});
