/**
 * The converter's num_logits_to_keep input (src/graph/logits-to-keep.ts): the lm_head
 * projects only the last N fed positions of every row, with the same logits there as the
 * graph projecting all of them, in every flavour and weight dtype; 0 keeps all (as in
 * transformers). The engine asks for the last position in a prefill unless a request reads
 * prompt logprobs, and serves the same tokens and logprobs as from a graph without the input.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { convertLlama2cModel, writeConvertedFiles } from '../../src/convert/convert-llama2c-model.js';
import { parseConvertFlags } from '../../scripts/convert/convert-flags.js';
import { buildLlamaGraph, EXTRA_OPSETS, type GraphOps } from '../../src/graph/llama-onnx-graph.js';
import { LOGITS_TO_KEEP_INPUT } from '../../src/graph/logits-to-keep.js';
import { encodeOnnxModel } from '../../src/graph/onnx-writer.js';
import { applyWeightDtype, checkpointOnWeightGrid, type WeightDtype } from '../../src/graph/weight-dtype.js';
import { MS_DOMAIN } from '../../src/graph/llama-graph-blocks.js';
import { emptyKvCache } from '../../src/engine/kv/kv-cache.js';
import { OnnxDecoder, promptInput } from '../../src/engine/onnx-decoder.js';
import type { ModelSpec } from '../../src/onnx/model-spec.js';
import type { OrtRuntime } from '../../src/onnx/ort-runtime.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { collectGeneration, collectJoiningMidway, golden } from '../helpers/model.js';
import { COMMITTED_ONNX, loadSharedCheckpoint, sharedModelFile } from './model-paths.js';
import { DecoderHarness, maxAbsDiff, VOCAB } from './onnx-decoder-harness.js';

const LONG = [1, 403, 407, 261, 378, 286, 261, 376, 267];
const SHORT = [1, 320, 395, 286, 261];
const TOLERANCE = 1e-5;

async function graphBytes(ops: GraphOps, dtype: WeightDtype): Promise<Uint8Array> {
  const ckpt = checkpointOnWeightGrid(await loadSharedCheckpoint(), dtype);
  const graph = applyWeightDtype(buildLlamaGraph(ckpt, { rmsNormEps: 1e-5, ops }), dtype);
  const extraOpsets = dtype === 'q4' ? { ...EXTRA_OPSETS[ops], [MS_DOMAIN]: 1 } : EXTRA_OPSETS[ops];
  return encodeOnnxModel({ irVersion: 8, opsetVersion: 17, producerName: 'test', producerVersion: '0', graph, extraOpsets });
}

/** Row r's logits at its last `keep` positions, from [batch, seq, vocab] logits of every position. */
function lastPositions(all: Float32Array, batch: number, seq: number, keep: number): Float32Array {
  const out = new Float32Array(batch * keep * VOCAB);
  for (let row = 0; row < batch; row++) {
    out.set(all.subarray((row * seq + seq - keep) * VOCAB, (row + 1) * seq * VOCAB), row * keep * VOCAB);
  }
  return out;
}

const pad = LONG.length - SHORT.length;
/** Two prompts left-padded to one length, as a batch of rows of different lengths is fed. */
const PADDED = {
  inputIds: [LONG, [...Array<number>(pad).fill(0), ...SHORT]],
  attentionMask: [LONG.map(() => 1), [...Array<number>(pad).fill(0), ...SHORT.map(() => 1)]],
  positionIds: [LONG.map((_, i) => i), [...Array<number>(pad).fill(1), ...SHORT.map((_, i) => i)]],
};

describe.each([
  ['fused', 'fp32'],
  ['fused', 'q4'],
  ['gqa', 'fp32'],
  ['portable', 'fp32'],
  ['inplace', 'fp32'],
  ['inplace', 'q4'],
] as const)('the %s %s graph with num_logits_to_keep', (ops, dtype) => {
  const harness = graphBytes(ops, dtype).then((bytes) => DecoderHarness.create(ort, bytes));

  it('takes it as an int64 scalar input after the Optimum ones', async () => {
    const { session } = await harness;
    expect(session.inputNames.at(-1)).toBe(LOGITS_TO_KEEP_INPUT);
    const meta = session.inputMetadata.find((entry) => entry.name === LOGITS_TO_KEEP_INPUT)!;
    expect(meta).toMatchObject({ isTensor: true, type: 'int64', shape: [] });
  });

  it('gives a left-padded batch the full graph\'s logits at the kept positions, every position for 0', async () => {
    const model = await harness;
    const seq = LONG.length;
    const all = await model.step({ ...PADDED, logitsToKeep: 0 });
    expect(all.dims).toEqual([2, seq, VOCAB]);
    for (const keep of [1, 3]) {
      const kept = await model.step({ ...PADDED, logitsToKeep: keep });
      expect(kept.dims).toEqual([2, keep, VOCAB]);
      expect(maxAbsDiff(kept.logits, lastPositions(all.logits, 2, seq, keep))).toBeLessThan(TOLERANCE);
    }
    // More than fed: every position (a Slice's start clamps to the front).
    const more = await model.step({ ...PADDED, logitsToKeep: seq + 5 });
    expect(maxAbsDiff(more.logits, all.logits)).toBe(0);
  });
});

it('keeps the last fed positions of a multi-token step on a cache', async () => {
  const model = await DecoderHarness.create(ort, await readFile(COMMITTED_ONNX));
  const first = await model.step({ inputIds: [LONG.slice(0, 4)], logitsToKeep: 1 });
  expect(first.dims).toEqual([1, 1, VOCAB]);
  const rest = { inputIds: [LONG.slice(4)], past: first.present };
  const all = await model.step({ ...rest, logitsToKeep: 0 });
  const kept = await model.step({ ...rest, logitsToKeep: 2 });
  expect(maxAbsDiff(kept.logits, lastPositions(all.logits, 1, LONG.length - 4, 2))).toBeLessThan(TOLERANCE);
});

it('the decoder asks for the last position only when told to, on the embedded model', async () => {
  const spec: ModelSpec = {
    numLayers: 5,
    numKeyValueHeads: 4,
    headDim: 8,
    vocabSize: VOCAB,
    maxPositionEmbeddings: 512,
    bosTokenId: 1,
    eosTokenIds: [2],
  };
  const decoder = await OnnxDecoder.create(ort as unknown as OrtRuntime, await readFile(COMMITTED_ONNX), spec);
  try {
    expect(decoder.contract.logitsToKeepInput).toBe(LOGITS_TO_KEEP_INPUT);
    const empty = () => emptyKvCache(spec.numLayers, 1, spec.numKeyValueHeads, spec.headDim);
    const all = await decoder.run(promptInput(LONG, empty()));
    const last = await decoder.run({ ...promptInput(LONG, empty()), logitsToKeep: 1 });
    expect(all.logits).toHaveLength(LONG.length * VOCAB);
    expect(last.logits).toHaveLength(VOCAB);
    expect(maxAbsDiff(last.logits, all.logits.subarray((LONG.length - 1) * VOCAB))).toBeLessThan(TOLERANCE);
  } finally {
    await decoder.dispose();
  }
});

describe('served by the engine', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  /** The stories260K conversion with the given CLI flags, in a fresh folder. */
  async function convertedFolder(flags: string[]): Promise<string> {
    const options = parseConvertFlags(flags);
    if (typeof options === 'string') throw new Error(options);
    const dir = await mkdtemp(join(tmpdir(), 'logits-to-keep-'));
    dirs.push(dir);
    const files = convertLlama2cModel(await readFile(sharedModelFile('stories260K.bin')), await readFile(sharedModelFile('tok512.bin')), options);
    await writeConvertedFiles(dir, files);
    return dir;
  }

  it('--all-logits writes the graph without the input, which still serves the same tokens and prompt logprobs', async () => {
    const withInput = await createNodeEngine({ modelDir: await convertedFolder([]) });
    const without = await createNodeEngine({ modelDir: await convertedFolder(['--all-logits']) });
    try {
      expect(withInput.loadReport.contract).toContain('num_logits_to_keep');
      expect(without.loadReport.contract).not.toContain('num_logits_to_keep');
      const greedy = { temperature: 0, maxTokens: golden.completion_ids.length, ignoreEos: true };
      for (const engine of [withInput, without]) {
        expect((await collectGeneration(engine, golden.prompt_ids, greedy)).tokenIds).toEqual(golden.completion_ids);
      }
      // Prompt logprobs need every position: the engine asks for all of them then.
      const params = { ...greedy, maxTokens: 3, promptLogprobs: 3 };
      const a = (await collectGeneration(withInput, golden.prompt_ids, params)).deltas[0].promptLogprobs!;
      const b = (await collectGeneration(without, golden.prompt_ids, params)).deltas[0].promptLogprobs!;
      expect(a).toHaveLength(golden.prompt_ids.length);
      expect(a[0]).toBeNull();
      a.slice(1).forEach((position, i) => {
        const other = b[i + 1]!;
        expect(position!.tokenId).toBe(other.tokenId);
        expect(position!.rank).toBe(other.rank);
        expect(Math.abs(position!.logprob - other.logprob)).toBeLessThan(TOLERANCE);
        expect(position!.top.map((t) => t.tokenId)).toEqual(other.top.map((t) => t.tokenId));
      });
    } finally {
      await withInput.dispose();
      await without.dispose();
    }
  });

  it.each(['fused', 'inplace'] as const)('the %s graph gives each of overlapping requests its solo greedy output', async (ops) => {
    const engine = await createNodeEngine({ modelDir: await convertedFolder([`--ops=${ops}`]), limits: { speculativeDecoding: 'off' } });
    try {
      expect(engine.loadReport.contract).toContain('num_logits_to_keep');
      const greedy = { temperature: 0, maxTokens: 12, ignoreEos: true };
      const prompts = [golden.prompt_ids, golden.prompt_ids.slice(0, 3), LONG, SHORT];
      const solo = [];
      for (const prompt of prompts) solo.push((await collectGeneration(engine, prompt, greedy)).tokenIds);
      expect(solo[0]).toEqual(golden.completion_ids.slice(0, 12));
      const together = await collectJoiningMidway(engine, prompts, greedy);
      expect(together.map((out) => out.tokenIds)).toEqual(solo);
    } finally {
      await engine.dispose();
    }
  });
});
