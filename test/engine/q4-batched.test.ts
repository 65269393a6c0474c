/**
 * A q4 graph from our converter (the defaults: MatMulNBits at accuracy level 4, the
 * embedding through GatherBlockQuantized) served by the engine: greedy ids of requests
 * batched together equal each request's solo ids, on stories260K's weights.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertLlama2cModel, writeConvertedFiles } from '../../src/convert/convert-llama2c-model.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createNodeEngine } from '../../src/runtime/node-engine.js';
import { sharedModelFile } from '../convert/model-paths.js';
import { collectGeneration, collectJoiningMidway } from '../helpers/model.js';

const PROMPTS = [
  [1, 403, 407, 261, 378],
  [1, 300, 290, 310],
  [1, 270, 500, 281, 266, 420, 333],
  [1, 450],
];
const GREEDY = { temperature: 0, maxTokens: 48, ignoreEos: true };

describe('a q4 model (converter defaults) under batching', () => {
  let dir: string;
  let engine: LocalEngine;
  let solo: number[][];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'q4-batched-'));
    const files = convertLlama2cModel(await readFile(sharedModelFile('stories260K.bin')), await readFile(sharedModelFile('tok512.bin')), {
      dtypes: ['q4'],
    });
    const graph = Buffer.from(files['onnx/model_q4.onnx'] as Uint8Array).toString('latin1');
    expect(graph).toContain('GatherBlockQuantized');
    await writeConvertedFiles(dir, files);
    engine = await createNodeEngine({ modelDir: dir, dtype: 'q4' });
    solo = [];
    for (const prompt of PROMPTS) solo.push((await collectGeneration(engine, prompt, GREEDY)).tokenIds);
  });

  afterAll(async () => {
    await engine?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('gives every request its solo greedy ids when all arrive at once', async () => {
    const together = await Promise.all(PROMPTS.map((prompt) => collectGeneration(engine, prompt, GREEDY)));
    together.forEach((out, i) => expect(out.tokenIds).toEqual(solo[i]));
  });

  it('gives every request its solo greedy ids when each joins a batch already decoding', async () => {
    const joined = await collectJoiningMidway(engine, PROMPTS, GREEDY);
    joined.forEach((out, i) => expect(out.tokenIds).toEqual(solo[i]));
    // The prompts lead to different texts: rows of one batch really differ.
    expect(new Set(solo.map((ids) => ids.join(','))).size).toBe(PROMPTS.length);
  });
});
