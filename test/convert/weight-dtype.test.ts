/**
 * The converter's fp16 and q4 graphs: their logits equal the llama2.c reference fed the
 * weights those files mean (Q4_0's values for q4, float16's for fp16), on both runtimes; the
 * q4 graph's MatMulNBits blocks are llama.cpp's Q4_0 blocks of the same checkpoint.
 */
import * as ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';
import { beforeAll, describe, expect, it } from 'vitest';
import { convertCheckpoint } from '../../src/convert/convert-llama2c-model.js';
import { parseConvertFlags } from '../../scripts/convert/convert-flags.js';
import type { GraphOps } from '../../src/graph/llama-onnx-graph.js';
import type { DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import { dequantizeQ4Rows, packQ4_0, quantizeQ4Rows, snapToQ4 } from '../../src/graph/q4-blocks.js';
import { checkpointOnWeightGrid, type WeightDtype } from '../../src/graph/weight-dtype.js';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeConvertedFiles } from '../../src/convert/convert-llama2c-model.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import { Llama2cReference, referenceGreedyIds } from './llama2c-reference.js';
import { loadSharedCheckpoint, sharedModelFile } from './model-paths.js';
import { DecoderHarness, logitsAt, maxAbsDiff, type Ort } from './onnx-decoder-harness.js';

ortWeb.env.wasm.numThreads = 1;

const PROMPT = [1, 403, 407, 261, 378, 432, 383];
const CONTINUATION = [286, 261, 376, 298, 315];
const TOLERANCE = 1e-4;

describe('Q4_0 blocks', () => {
  it('quantize a block as llama.cpp Q4_0 does: d = signed max / -8, q = trunc(x / d + 8.5) capped at 15', () => {
    const block = new Float32Array(32);
    block[0] = -1; // the largest magnitude: d = -1 / -8 = 0.125, q = trunc(-8 + 8.5) = 0
    block[1] = 0.5; // trunc(4 + 8.5) = 12
    block[2] = 1; // trunc(8 + 8.5) = 16, capped at 15: means 0.875
    block[3] = 0.06; // trunc(0.48 + 8.5) = 8: means 0
    const blocks = quantizeQ4Rows(block, 1, 32);
    expect(blocks.scales[0]).toBe(0.125);
    expect([...blocks.q.subarray(0, 5)]).toEqual([0, 12, 15, 8, 8]);
    const values = dequantizeQ4Rows(blocks);
    expect([...values.subarray(0, 4)]).toEqual([-1, 0.5, 0.875, 0]);
  });

  it('pack into GGML block_q4_0: float16 scale, low nibbles elements 0..15, high nibbles 16..31', () => {
    const block = Float32Array.from({ length: 32 }, (_, i) => (i === 0 ? -8 : i === 16 ? 7 : 0));
    const bytes = packQ4_0(quantizeQ4Rows(block, 1, 32));
    expect(bytes.length).toBe(18);
    expect(bytes[0] | (bytes[1] << 8)).toBe(0x3c00); // float16 1.0
    expect(bytes[2]).toBe(0x0 | (15 << 4)); // element 0: q 0; element 16: q 15
    expect(bytes[3]).toBe(0x8 | (8 << 4));
  });

  it('re-quantize their own values without loss, also after scaling', async () => {
    const ckpt = await loadSharedCheckpoint();
    const { dim } = ckpt.header;
    const original = quantizeQ4Rows(ckpt.layers[0].wq, dim, dim);
    const snapped = snapToQ4(ckpt.layers[0].wq, dim, dim);
    const again = quantizeQ4Rows(snapped, dim, dim);
    expect(again.q).toEqual(original.q);
    expect(again.scales).toEqual(original.scales);
    const scaled = quantizeQ4Rows(snapped.map((x) => x / Math.sqrt(8)), dim, dim, { float16Scales: false });
    expect(scaled.q).toEqual(original.q);
  });
});

describe('converter flags', () => {
  it('take one or several dtypes and refuse unknown ones', () => {
    expect(parseConvertFlags(['--dtype=q4,fp16', '--ops=gqa'])).toEqual({ ops: 'gqa', dtypes: ['q4', 'fp16'] });
    expect(parseConvertFlags(['--dtype=int3'])).toMatch(/unknown dtype int3/);
    expect(parseConvertFlags(['--q4-accuracy=4'])).toMatchObject({ q4AccuracyLevel: 4 });
    expect(parseConvertFlags(['--q4-accuracy=2', '--q4-embedding=float'])).toMatchObject({ q4AccuracyLevel: 2, q4Embedding: 'float' });
    expect(parseConvertFlags(['--q4-accuracy=5'])).toMatch(/unknown option/);
    expect(parseConvertFlags(['--q4-embedding=int8'])).toMatch(/unknown option/);
  });
});

/**
 * `tolerance` bounds |logits − reference|: 1e-4 where the runtime computes with the stored
 * weights in float32 (q4 at accuracy level 0, fp16, and level 4 on WASM, which has no int8
 * kernel); at level 4 onnxruntime-node quantizes activations to int8 per block of 32, which
 * moves logits (−14 to 18 here) by up to ~0.15. q4-kernels.test.ts checks that
 * arithmetic exactly, on one projection.
 */
function graphTests(ort: Ort, dtype: WeightDtype, file: string, ops: GraphOps, q4AccuracyLevel: 0 | 4 = 0, tolerance = TOLERANCE) {
  let reference: DecoderCheckpoint;
  let model: DecoderHarness;
  let bytes: Uint8Array;

  beforeAll(async () => {
    const ckpt = await loadSharedCheckpoint();
    reference = checkpointOnWeightGrid(ckpt, dtype);
    const files = convertCheckpoint(ckpt, await readFile(sharedModelFile('tok512.bin')), { dtypes: [dtype], ops, q4AccuracyLevel });
    bytes = files[file] as Uint8Array;
    model = await DecoderHarness.create(ort, bytes);
  });

  it('gives the reference logits of the weights it stores, at prefill and over cached decode steps', async () => {
    const tokens = [...PROMPT, ...CONTINUATION];
    const expected = Llama2cReference.prefill(reference, tokens);
    let out = await model.step({ inputIds: [PROMPT] });
    PROMPT.forEach((_, pos) => expect(maxAbsDiff(logitsAt(out.logits, pos), expected[pos])).toBeLessThan(tolerance));
    for (let pos = PROMPT.length; pos < tokens.length; pos++) {
      out = await model.step({ inputIds: [[tokens[pos]]], past: out.present });
      expect(maxAbsDiff(logitsAt(out.logits, 0), expected[pos])).toBeLessThan(tolerance);
    }
  });

  it('differs from the float32 reference (the weights really are stored coarser)', async () => {
    const float32 = Llama2cReference.prefill(await loadSharedCheckpoint(), PROMPT);
    const out = await model.step({ inputIds: [PROMPT] });
    expect(maxAbsDiff(logitsAt(out.logits, PROMPT.length - 1), float32[PROMPT.length - 1])).toBeGreaterThan(dtype === 'q4' ? 1e-2 : 1e-6);
  });
}

/*
 * fp16 is checked on the gqa flavour: fused and portable store q pre-scaled by 1/sqrt(8),
 * which float16 rounds once more (logits then differ from the reference by up to ~2e-3);
 * Q4_0's grid survives that scaling exactly (see q4-blocks.ts), so q4 is checked on both.
 */
describe.each([
  ['q4', 'onnx/model_q4.onnx', 'fused'],
  ['q4', 'onnx/model_q4.onnx', 'inplace'],
  ['q4', 'onnx/model_q4.onnx', 'gqa'],
  ['fp16', 'onnx/model_fp16.onnx', 'gqa'],
] as const)('the %s graph (%s)', (dtype, file, ops) => {
  describe('on onnxruntime-node', () => graphTests(ortNode, dtype, file, ops));
  describe('on onnxruntime-web (WASM)', () => graphTests(ortWeb, dtype, file, ops));
});

describe.each(['fused', 'inplace'] as const)('the q4 graph at accuracy level 4 (the default), %s', (ops) => {
  describe('on onnxruntime-node (int8 activations)', () => graphTests(ortNode, 'q4', 'onnx/model_q4.onnx', ops, 4, 0.5));
  describe('on onnxruntime-web (WASM: float32)', () => graphTests(ortWeb, 'q4', 'onnx/model_q4.onnx', ops, 4));
});

describe("the q4 in-place twin (the graph Node serves when the folder has it)", () => {
  it("gives the fused q4 graph's logits at accuracy level 4, at prefill and over cached decode steps", async () => {
    const ckpt = await loadSharedCheckpoint();
    const tokenizer = await readFile(sharedModelFile('tok512.bin'));
    const [fused, inplace] = await Promise.all(
      (['fused', 'inplace'] as const).map(async (ops) =>
        DecoderHarness.create(ortNode, convertCheckpoint(ckpt, tokenizer, { dtypes: ['q4'], ops })['onnx/model_q4.onnx'] as Uint8Array),
      ),
    );
    const tokens = [...PROMPT, ...CONTINUATION];
    let a = await fused.step({ inputIds: [PROMPT] });
    let b = await inplace.step({ inputIds: [PROMPT] });
    // Same blocks, same int8 activations: only the attention's summation order differs.
    expect(maxAbsDiff(a.logits, b.logits)).toBeLessThan(1e-4);
    for (let pos = PROMPT.length; pos < tokens.length; pos++) {
      a = await fused.step({ inputIds: [[tokens[pos]]], past: a.present });
      b = await inplace.step({ inputIds: [[tokens[pos]]], past: b.present });
      expect(maxAbsDiff(a.logits, b.logits)).toBeLessThan(1e-4);
      expect(maxAbsDiff(a.present.get('past_key_values.4.value')!.data as Float32Array, b.present.get('past_key_values.4.value')!.data as Float32Array)).toBeLessThan(1e-4);
    }
  });
});

describe('the q4 graph file', () => {
  it('runs its projections as MatMulNBits (4 bits, blocks of 32) and is smaller than fp32', async () => {
    const ckpt = await loadSharedCheckpoint();
    const files = convertCheckpoint(ckpt, await readFile(sharedModelFile('tok512.bin')), { dtypes: ['fp32', 'q4', 'fp16'] });
    const text = Buffer.from(files['onnx/model_q4.onnx'] as Uint8Array).toString('latin1');
    // 5 layers × (qkv, o, gate_up) + the tied head; down_proj (input 172) stays float.
    expect(text.split('MatMulNBits').length - 1).toBeGreaterThanOrEqual(16);
    expect((files['onnx/model_q4.onnx'] as Uint8Array).length).toBeLessThan((files['onnx/model.onnx'] as Uint8Array).length);
    expect((files['onnx/model_fp16.onnx'] as Uint8Array).length).toBeLessThan((files['onnx/model.onnx'] as Uint8Array).length);
  });
});

const referenceGreedy = (ckpt: DecoderCheckpoint, count: number) => referenceGreedyIds(ckpt, PROMPT, count);

describe('a converted folder with fp32 and q4 graphs', () => {
  it('is served in q4 with MODEL_DTYPE q4, greedy ids as the reference on Q4_0 weights gives them', async () => {
    const ckpt = await loadSharedCheckpoint();
    const dir = await mkdtemp(join(tmpdir(), 'q4-folder-'));
    try {
      await writeConvertedFiles(dir, convertCheckpoint(ckpt, await readFile(sharedModelFile('tok512.bin')), { dtypes: ['fp32', 'q4'] }));
      const engine = await createNodeEngine({ modelDir: dir, dtype: 'q4' });
      const ours: number[] = [];
      const params = defaultSamplingParams({ temperature: 0, maxTokens: 24, ignoreEos: true });
      for await (const delta of engine.generate({ promptTokenIds: PROMPT, params })) ours.push(...delta.tokenIds);
      await engine.dispose();

      const expected = referenceGreedy(checkpointOnWeightGrid(ckpt, 'q4'), 24);
      // The Q4_0 weights change the greedy path within these 24 tokens: a float32 graph would fail.
      expect(referenceGreedy(ckpt, 24)).not.toEqual(expected);
      expect(ours).toEqual(expected);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("with q4's in-place twin beside it, MODEL_DTYPE q4 serves the twin: the reference's greedy ids, batched as solo", async () => {
    const ckpt = await loadSharedCheckpoint();
    const tokenizer = await readFile(sharedModelFile('tok512.bin'));
    const dir = await mkdtemp(join(tmpdir(), 'q4-twin-folder-'));
    try {
      await writeConvertedFiles(dir, convertCheckpoint(ckpt, tokenizer, { dtypes: ['fp32', 'q4'] }));
      await writeConvertedFiles(dir, {
        'onnx/model_q4.inplace.onnx': convertCheckpoint(ckpt, tokenizer, { dtypes: ['q4'], ops: 'inplace' })['onnx/model_q4.onnx'],
      });
      const engine = await createNodeEngine({ modelDir: dir, dtype: 'q4' });
      try {
        expect(engine.loadReport.file).toBe('onnx/model_q4.inplace.onnx');
        expect(engine.loadReport.contract).toContain('in-place KV (new_key_values)');
        const prompts = [PROMPT, [1, 286, 261], [1, 376, 298, 315, 403, 407]];
        const run = async (prompt: number[]) => {
          const ids: number[] = [];
          const params = defaultSamplingParams({ temperature: 0, maxTokens: 24, ignoreEos: true });
          for await (const delta of engine.generate({ promptTokenIds: prompt, params })) ids.push(...delta.tokenIds);
          return ids;
        };
        const solo: number[][] = [];
        for (const prompt of prompts) solo.push(await run(prompt));
        expect(solo[0]).toEqual(referenceGreedy(checkpointOnWeightGrid(ckpt, 'q4'), 24));
        expect(await Promise.all(prompts.map(run))).toEqual(solo);
      } finally {
        await engine.dispose();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
