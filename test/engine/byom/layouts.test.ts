/**
 * Each export layout users bring, served by the engine: logits match the reference forward
 * pass, greedy output is the reference's, and overlapping requests of different lengths
 * get exactly the tokens each gets alone, batched the way the graph wants (or one request
 * per step when it cannot batch). Fixtures: test/helpers/byom-fixtures.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as ortNode from 'onnxruntime-node';
import type { ModelSpec } from '../../../src/onnx/model-spec.js';
import { emptyKvCache } from '../../../src/engine/kv/kv-cache.js';
import { OnnxDecoder, promptInput } from '../../../src/engine/onnx-decoder.js';
import type { OrtRuntime } from '../../../src/onnx/ort-runtime.js';
import type { DecoderLayoutOptions } from '../../../src/graph/graph-variants.js';
import { GraphBuilder } from '../../../src/graph/graph-builder.js';
import { encodeOnnxModel, OnnxDataType } from '../../../src/graph/onnx-writer.js';
import { Llama2cReference } from '../../convert/llama2c-reference.js';
import { collectGeneration, collectJoiningMidway } from '../../helpers/model.js';
import { createNodeEngine } from '../../../src/runtime/node/engine.js';
import {
  buildFixtureGraph,
  encodeFixtureGraph,
  fixtureCheckpoint,
  referenceGreedy,
  removeFixtureFolders,
  writeFixtureFolder,
  type FixtureGraph,
} from '../../helpers/byom-fixtures.js';

afterAll(removeFixtureFolders);

const ort = ortNode as unknown as OrtRuntime;
const PROMPTS = [
  [72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100],
  [84, 104],
  [65, 32, 115, 104, 111, 114, 116, 101, 114],
];
const STEPS = 10;

interface Layout {
  name: string;
  graph?: FixtureGraph;
  layout?: DecoderLayoutOptions;
  batching: 'end' | 'start' | 'one-request-per-step';
  contract: string;
}

const LAYOUTS: Layout[] = [
  { name: 'float32, position_ids (the converter\'s own)', batching: 'end', contract: 'ids int64, KV float32, logits float32, position_ids' },
  { name: 'float16 KV cache and logits (fp16 / q4f16 exports)', layout: { kvType: 'float16', logitsType: 'float16' }, batching: 'end', contract: 'ids int64, KV float16, logits float16, position_ids' },
  { name: 'int32 ids', layout: { idsType: 'int32' }, batching: 'end', contract: 'ids int32, KV float32, logits float32, position_ids' },
  { name: 'num_logits_to_keep', layout: { logitsToKeep: 'num_logits_to_keep' }, batching: 'end', contract: 'ids int64, KV float32, logits float32, position_ids, num_logits_to_keep' },
  { name: 'logits_to_keep + use_cache_branch (merged decoder)', layout: { logitsToKeep: 'logits_to_keep', useCacheBranch: true }, batching: 'end', contract: 'ids int64, KV float32, logits float32, position_ids, logits_to_keep, use_cache_branch' },
  { name: 'no position_ids, positions from the mask', layout: { positions: 'from-mask' }, batching: 'end', contract: 'ids int64, KV float32, logits float32, no position_ids' },
  { name: 'no position_ids, positions from the past length', layout: { positions: 'from-past-length' }, batching: 'one-request-per-step', contract: 'ids int64, KV float32, logits float32, no position_ids' },
  { name: 'GroupQueryAttention with an attention bias', graph: 'gqa', batching: 'end', contract: 'ids int64, KV float32, logits float32, position_ids' },
  { name: 'GroupQueryAttention wired as onnxruntime-genai (seqlens_k from the mask)', graph: 'gqa-genai', batching: 'start', contract: 'ids int64, KV float32, logits float32, position_ids' },
  { name: 'in-place KV cache (the converter\'s inplace flavour: new_key_values out, a cache with room in)', graph: 'inplace', batching: 'start', contract: 'ids int64, KV float32, logits float32, position_ids, in-place KV (new_key_values)' },
  { name: 'in-place KV cache, float16 KV and logits', graph: 'inplace', layout: { kvType: 'float16', logitsType: 'float16' }, batching: 'start', contract: 'ids int64, KV float16, logits float16, position_ids, in-place KV (new_key_values)' },
  { name: 'in-place KV cache, one new_key_values output per layer and kind (the flavour\'s first form)', graph: 'inplace', layout: { newKvPerLayer: true }, batching: 'start', contract: 'ids int64, KV float32, logits float32, position_ids, in-place KV (new_key_values.N.*)' },
  { name: 'in-place KV cache, one output per layer, float16 KV', graph: 'inplace', layout: { newKvPerLayer: true, kvType: 'float16', logitsType: 'float16' }, batching: 'start', contract: 'ids int64, KV float16, logits float16, position_ids, in-place KV (new_key_values.N.*)' },
  { name: 'standard ops only', graph: 'portable', batching: 'end', contract: 'ids int64, KV float32, logits float32, position_ids' },
];

function specOf(): ModelSpec {
  const { header, headDim } = fixtureCheckpoint();
  return {
    numLayers: header.nLayers,
    numKeyValueHeads: header.nKvHeads,
    headDim,
    vocabSize: header.vocabSize,
    maxPositionEmbeddings: header.seqLen,
    bosTokenId: null,
    eosTokenIds: [],
  };
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

const greedy = { temperature: 0, maxTokens: STEPS, ignoreEos: true };

describe.each(LAYOUTS)('layout: $name', ({ graph, layout, batching, contract }) => {
  const float16 = layout?.kvType === 'float16' || layout?.logitsType === 'float16';
  const tolerance = float16 ? 3e-2 : 1e-4;

  it('gives the reference logits at every prefill position', async () => {
    const spec = specOf();
    const decoder = await OnnxDecoder.create(ort, encodeFixtureGraph(buildFixtureGraph(graph, layout), graph), spec);
    try {
      const prompt = PROMPTS[0];
      const out = await decoder.run({
        ...promptInput(prompt, emptyKvCache(spec.numLayers, 1, spec.numKeyValueHeads, spec.headDim, decoder.contract.kvType)),
      });
      const expected = Llama2cReference.prefill(fixtureCheckpoint(), prompt);
      expect(out.logits).toBeInstanceOf(Float32Array);
      expected.forEach((row, pos) => {
        expect(maxAbsDiff(out.logits.subarray(pos * spec.vocabSize, (pos + 1) * spec.vocabSize), row)).toBeLessThan(tolerance);
      });
    } finally {
      await decoder.dispose();
    }
  });

  it('is served with the reference greedy output, alone and under overlapping requests', async () => {
    const dir = await writeFixtureFolder({ graph, layout });
    const engine = await createNodeEngine({ modelDir: dir, limits: { speculativeDecoding: 'off' } });
    try {
      const report = engine.loadReport;
      expect(report.contract).toBe(contract);
      expect(report.batching.kind === 'batched' ? report.batching.padding : report.batching.kind).toBe(batching);
      const solo: number[][] = [];
      for (const prompt of PROMPTS) solo.push((await collectGeneration(engine, prompt, greedy)).tokenIds);
      PROMPTS.forEach((prompt, i) => expect(solo[i]).toEqual(referenceGreedy(prompt, STEPS).tokenIds));
      const stepsBefore = engine.stats().steps;
      const together = (await collectJoiningMidway(engine, PROMPTS, greedy)).map((out) => out.tokenIds);
      expect(together).toEqual(solo);
      const steps = engine.stats().steps - stepsBefore;
      // Batched: the three requests share steps; one request per step: 3 × (prefill + decode steps).
      if (batching === 'one-request-per-step') expect(steps).toBe(PROMPTS.length * STEPS);
      else expect(steps).toBeLessThan(PROMPTS.length * STEPS);
    } finally {
      await engine.dispose();
    }
  });
});

describe('onnxruntime-web (WASM) on the layouts that differ most', () => {
  it.each([
    { name: 'float16 KV and logits', layout: { kvType: 'float16', logitsType: 'float16' } as DecoderLayoutOptions },
    { name: 'genai GroupQueryAttention', graph: 'gqa-genai' as FixtureGraph },
  ])('$name: greedy equals the reference, batched equals alone', async ({ graph, layout }) => {
    const dir = await writeFixtureFolder({ graph, layout });
    const engine = await createNodeEngine({ modelDir: dir, backend: 'wasm', limits: { speculativeDecoding: 'off' } });
    try {
      const together = await Promise.all(PROMPTS.map((prompt) => collectGeneration(engine, prompt, greedy)));
      together.forEach((out, i) => expect(out.tokenIds).toEqual(referenceGreedy(PROMPTS[i], STEPS).tokenIds));
    } finally {
      await engine.dispose();
    }
  });
});

describe('graphs the engine cannot serve, or batch', () => {
  it('refuses at startup a graph with a required input it does not know, naming it', async () => {
    const dir = await writeFixtureFolder({
      layout: { extraInputs: [{ name: 'token_type_ids', elemType: 7, shape: ['batch_size', 'sequence_length'] }] },
    });
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(
      'onnx/model.onnx cannot be served: it requires input "token_type_ids", which the engine does not know how to feed',
    );
  });

  it('refuses a graph whose KV cache disagrees with config.json', async () => {
    const dir = await writeFixtureFolder({ config: { num_key_value_heads: 4 } });
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(
      'onnx/model.onnx cannot be served: its KV cache has 2 heads, but config.json gives 4 key/value heads (num_key_value_heads).',
    );
  });

  it('refuses a KV cache of an element type the engine does not feed', async () => {
    const dir = await writeFixtureFolder({ layout: { kvType: 'bfloat16' } });
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(
      "onnx/model.onnx cannot be served: onnxruntime cannot load it: an input or output is bfloat16, which onnxruntime's JavaScript API cannot exchange (the engine handles float32 and float16 KV and logits).",
    );
  });

  it('refuses a graph with fewer layers than config.json declares', async () => {
    const dir = await writeFixtureFolder({ config: { num_hidden_layers: 3 } });
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(
      'onnx/model.onnx cannot be served: it has no "past_key_values.2.key" input, but config.json declares 3 layers.',
    );
  });

  it('refuses a graph whose head size disagrees with config.json', async () => {
    const dir = await writeFixtureFolder({ config: { head_dim: 16 } });
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(
      'onnx/model.onnx cannot be served: its KV cache has head size 8, but config.json gives 16 (head_dim, or hidden_size / num_attention_heads).',
    );
  });

  it('refuses a graph exported without past_key_values', async () => {
    const g = new GraphBuilder('no_cache');
    const ids = g.input('input_ids', OnnxDataType.INT64, ['batch_size', 'sequence_length']);
    g.input('attention_mask', OnnxDataType.INT64, ['batch_size', 'sequence_length']);
    g.node('Cast', [ids], { scope: '/x', attributes: { to: OnnxDataType.FLOAT }, outputs: ['logits'] });
    g.output('logits', OnnxDataType.FLOAT, ['batch_size', 'sequence_length']);
    const bytes = encodeOnnxModel({ irVersion: 8, opsetVersion: 17, producerName: 'test', producerVersion: '0', graph: g.build() });
    await expect(OnnxDecoder.create(ort, bytes, specOf(), {}, 'onnx/model.onnx')).rejects.toThrow(
      'onnx/model.onnx cannot be served: it has no "past_key_values.0.key" input, so it is not a decoder exported with past_key_values (inputs: input_ids, attention_mask).',
    );
  });

  it('serves dynamic int8 graphs batched, warning that batching changes their output slightly', async () => {
    const dir = await writeFixtureFolder({ files: ['onnx/model_int8.onnx'], layout: { dynamicInt8: true } });
    const engine = await createNodeEngine({ modelDir: dir });
    try {
      expect(engine.loadReport.dtype).toBe('int8');
      expect(engine.loadReport.batching).toEqual({ kind: 'batched', padding: 'end' });
      expect(engine.loadReport.warnings.join('\n')).toMatch(
        /quantizes activations dynamically \(DynamicQuantizeLinear\).*Set "crossRequestBatching": false for output independent of other requests\./,
      );
    } finally {
      await engine.dispose();
    }
  });

  it('runs one request per step when crossRequestBatching is off: overlapping int8 requests equal their solo runs', async () => {
    const dir = await writeFixtureFolder({ layout: { dynamicInt8: true } });
    const engine = await createNodeEngine({ modelDir: dir, limits: { crossRequestBatching: false, speculativeDecoding: 'off' } });
    try {
      expect(engine.loadReport.batching).toEqual({ kind: 'one-request-per-step', reason: 'the crossRequestBatching setting is false' });
      expect(engine.loadReport.warnings).toEqual([]);
      const solo: number[][] = [];
      for (const prompt of PROMPTS) solo.push((await collectGeneration(engine, prompt, greedy)).tokenIds);
      const together = await Promise.all(PROMPTS.map(async (prompt) => (await collectGeneration(engine, prompt, greedy)).tokenIds));
      expect(together).toEqual(solo);
    } finally {
      await engine.dispose();
    }
  });

  it('says at startup why a graph with positions from the past length runs one request per step', async () => {
    const dir = await writeFixtureFolder({ layout: { positions: 'from-past-length' } });
    const engine = await createNodeEngine({ modelDir: dir });
    try {
      expect(engine.loadReport.warnings).toHaveLength(1);
      expect(engine.loadReport.warnings[0]).toMatch(
        /^cross-request batching is off for this graph: batched rows of different lengths gave logits different from the same rows alone \(left padding: .*, right padding: .*\)/,
      );
    } finally {
      await engine.dispose();
    }
  });
});


describe('num_logits_to_keep', () => {
  it('gives the same prompt logprobs and output as a graph without it, asking for every position only then', async () => {
    const plainDir = await writeFixtureFolder();
    const keepDir = await writeFixtureFolder({ layout: { logitsToKeep: 'num_logits_to_keep' } });
    const plain = await createNodeEngine({ modelDir: plainDir });
    const keep = await createNodeEngine({ modelDir: keepDir });
    try {
      const params = { temperature: 0, maxTokens: 4, ignoreEos: true, promptLogprobs: 2 };
      const a = await collectGeneration(plain, PROMPTS[0], params);
      const b = await collectGeneration(keep, PROMPTS[0], params);
      expect(b.tokenIds).toEqual(a.tokenIds);
      const logprobs = (out: typeof a) => out.deltas[0].promptLogprobs!;
      expect(logprobs(b)).toHaveLength(PROMPTS[0].length);
      logprobs(b).forEach((position, i) => {
        if (position === null) return expect(logprobs(a)[i]).toBeNull();
        expect(position.logprob).toBeCloseTo(logprobs(a)[i]!.logprob, 4);
      });
      const withoutLogprobs = await collectGeneration(keep, PROMPTS[0], { temperature: 0, maxTokens: 4, ignoreEos: true });
      expect(withoutLogprobs.tokenIds).toEqual(a.tokenIds);
    } finally {
      await plain.dispose();
      await keep.dispose();
    }
  });
});

it('a graph with num_logits_to_keep returns only the rows asked for', async () => {
  const spec = specOf();
  const decoder = await OnnxDecoder.create(ort, encodeFixtureGraph(buildFixtureGraph('fused', { logitsToKeep: 'num_logits_to_keep' })), spec);
  try {
    const prompt = PROMPTS[0];
    const out = await decoder.run({
      ...promptInput(prompt, emptyKvCache(spec.numLayers, 1, spec.numKeyValueHeads, spec.headDim)),
      logitsToKeep: 1,
    });
    expect(out.logits).toHaveLength(spec.vocabSize);
    const expected = Llama2cReference.prefill(fixtureCheckpoint(), prompt).at(-1)!;
    expect(maxAbsDiff(out.logits, expected)).toBeLessThan(1e-4);
  } finally {
    await decoder.dispose();
  }
});
