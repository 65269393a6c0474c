/**
 * A q4 graph from our converter (the defaults: MatMulNBits at accuracy level 4, the
 * embedding through GatherBlockQuantized) served by the engine: greedy ids of requests
 * batched together equal each request's solo ids, on stories260K's weights. And a q4 graph
 * whose batched logits are not exactly its solo ones (int8 activations turn the batched
 * kernels' last-bit differences into visible ones, as on the bench's 135M-shaped model)
 * stays batched with a warning, like a dynamic int8 graph, unless crossRequestBatching is off.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomLlamaCheckpoint } from '../../scripts/convert/random-checkpoint.js';
import { convertCheckpoint, convertLlama2cModel, writeConvertedFiles } from '../../src/convert/convert-llama2c-model.js';
import { int8ActivationsOf } from '../../src/engine/loading/batching-self-test.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { sharedModelFile } from '../convert/model-paths.js';
import { collectGeneration, collectJoiningMidway, REPO_ROOT } from '../helpers/model.js';

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

describe('a q4 model whose batched rows differ from its solo ones in the last bits', () => {
  let dir: string;
  let ckptTokenizer: Buffer;
  let files: Record<string, string | Uint8Array>;
  const checkpoint = () =>
    // 576 wide with an 8192-token head: shapes where MLAS's one-row and many-row int8 kernels
    // round differently enough to show (the narrower stories260K above batches exactly).
    randomLlamaCheckpoint({ dim: 576, hiddenDim: 1536, nLayers: 2, nHeads: 9, nKvHeads: 3, vocabSize: 8192, seqLen: 128 }, 7);
  const prompts = PROMPTS.map((prompt) => prompt.map((id) => (id * 13) % 8192));

  beforeAll(async () => {
    ckptTokenizer = await readFile(join(REPO_ROOT, 'test/fixtures/stories260K/tok512.bin'));
    files = convertCheckpoint(checkpoint(), ckptTokenizer, { dtypes: ['q4'] });
    dir = await mkdtemp(join(tmpdir(), 'q4-int8-batched-'));
    await writeConvertedFiles(dir, files);
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is recognised as rounding activations to int8 at accuracy level 4; the same weights at level 0 batch exactly', async () => {
    expect(int8ActivationsOf(files['onnx/model_q4.onnx'] as Uint8Array)).toBe('MatMulNBits accuracy_level 4');
    const level0 = convertCheckpoint(checkpoint(), ckptTokenizer, { dtypes: ['q4'], q4AccuracyLevel: 0 });
    expect(int8ActivationsOf(level0['onnx/model_q4.onnx'] as Uint8Array)).toBeNull();
    // With float activations the kernels' last-bit differences stay last-bit: it is the int8
    // rounding, not the batching, that moves the level-4 graph's rows.
    const level0Dir = await mkdtemp(join(tmpdir(), 'q4-level0-'));
    await writeConvertedFiles(level0Dir, level0);
    const engine = await createNodeEngine({ modelDir: level0Dir, dtype: 'q4' });
    try {
      expect(engine.loadReport.batching.kind).toBe('batched');
      expect(engine.loadReport.warnings).toEqual([]);
    } finally {
      await engine.dispose();
      await rm(level0Dir, { recursive: true, force: true });
    }
  });

  it('stays batched across requests, saying at startup that batching moves its output slightly and how to turn it off', async () => {
    const engine = await createNodeEngine({ modelDir: dir, dtype: 'q4' });
    try {
      expect(engine.loadReport.batching.kind).toBe('batched');
      expect(engine.loadReport.warnings.join('\n')).toMatch(
        /rounds activations to int8 \(MatMulNBits accuracy_level 4\).*up to [\d.]+% of the logits in the self-test\)\. Set "crossRequestBatching": false for output independent of other requests\./,
      );
    } finally {
      await engine.dispose();
    }
  });

  it('with crossRequestBatching off, runs one request per step and overlapping requests equal their solo runs', async () => {
    const engine = await createNodeEngine({ modelDir: dir, dtype: 'q4', limits: { crossRequestBatching: false, speculativeDecoding: 'off' } });
    try {
      expect(engine.loadReport.batching).toEqual({ kind: 'one-request-per-step', reason: 'the crossRequestBatching setting is false' });
      expect(engine.loadReport.warnings).toEqual([]);
      const greedy = { temperature: 0, maxTokens: 12, ignoreEos: true };
      const alone: number[][] = [];
      for (const prompt of prompts) alone.push((await collectGeneration(engine, prompt, greedy)).tokenIds);
      const together = await Promise.all(prompts.map(async (prompt) => (await collectGeneration(engine, prompt, greedy)).tokenIds));
      expect(together).toEqual(alone);
    } finally {
      await engine.dispose();
    }
  });
});
