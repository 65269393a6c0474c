/**
 * The q4 pass on one-node graphs, checked against references written here from the formats'
 * definitions (no onnxruntime code): a projection through MatMulNBits at accuracy levels 0
 * and 4, and the embedding through GatherBlockQuantized.
 */
import * as ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';
import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../src/graph/graph-builder.js';
import { MS_DOMAIN } from '../../src/graph/llama-graph-blocks.js';
import { encodeOnnxModel, OnnxDataType, type OnnxGraph } from '../../src/graph/onnx-writer.js';
import { dequantizeQ4Rows, quantizeQ4Rows, Q4_BLOCK } from '../../src/graph/q4-blocks.js';
import { seededRandom } from '../../scripts/seeded-random.js';
import { applyWeightDtype, type WeightDtypeOptions } from '../../src/graph/weight-dtype.js';
import type { Ort } from './onnx-decoder-harness.js';

ortWeb.env.wasm.numThreads = 1;

const K = 96; // three blocks per row
const N = 40;
const ROWS = 5;

function randomFloats(count: number, seed: number, scale = 1): Float32Array {
  const random = seededRandom(seed);
  return Float32Array.from({ length: count }, () => (random() * 2 - 1) * scale);
}

function encode(graph: OnnxGraph): Uint8Array {
  return encodeOnnxModel({
    irVersion: 8,
    opsetVersion: 17,
    extraOpsets: { [MS_DOMAIN]: 1 },
    producerName: 'test',
    producerVersion: '0',
    graph,
  });
}

/** y = x · W with W given as [K, N] (a MatMul initializer), through the q4 pass. */
function projectionGraph(weightsKN: Float32Array, options: WeightDtypeOptions): Uint8Array {
  const g = new GraphBuilder('projection');
  const x = g.input('x', OnnxDataType.FLOAT, [ROWS, K]);
  const w = g.floats('w', [K, N], weightsKN);
  g.node('MatMul', [x, w], { scope: '/proj', outputs: ['y'] });
  g.output('y', OnnxDataType.FLOAT, [ROWS, N]);
  return encode(applyWeightDtype(g.build(), 'q4', options));
}

/** W's rows [N, K] (output features, blocks along K) as the pass quantizes them: float32 scales. */
function q4Rows(weightsKN: Float32Array) {
  const rows = new Float32Array(N * K);
  for (let k = 0; k < K; k++) for (let n = 0; n < N; n++) rows[n * K + k] = weightsKN[k * N + n];
  return quantizeQ4Rows(rows, N, K, { float16Scales: false });
}

/** Σ_k x[k] · ((q[n, k] − 8) · d[n, k / 32]) in float64: accuracy level 0's meaning. */
function referenceFloat(x: Float32Array, weightsKN: Float32Array): Float64Array {
  const w = dequantizeQ4Rows(q4Rows(weightsKN));
  const y = new Float64Array(ROWS * N);
  for (let r = 0; r < ROWS; r++) for (let n = 0; n < N; n++) for (let k = 0; k < K; k++) y[r * N + n] += x[r * K + k] * w[n * K + k];
  return y;
}

/**
 * Accuracy level 4's meaning (llama.cpp's Q8_0 activations): each row of x is cut into blocks
 * of 32, each block quantized to int8 with scale s = max|x| / 127, a = round(x / s); a block
 * product is s · d · Σ a · (q − 8).
 */
function referenceInt8(x: Float32Array, weightsKN: Float32Array): Float64Array {
  const blocks = q4Rows(weightsKN);
  const y = new Float64Array(ROWS * N);
  for (let r = 0; r < ROWS; r++) {
    for (let b = 0; b < K / Q4_BLOCK; b++) {
      const block = x.subarray(r * K + b * Q4_BLOCK, r * K + (b + 1) * Q4_BLOCK);
      const s = Math.max(...block.map(Math.abs)) / 127;
      const a = block.map((v) => (s === 0 ? 0 : Math.round(v / s)));
      for (let n = 0; n < N; n++) {
        let dot = 0;
        for (let j = 0; j < Q4_BLOCK; j++) dot += a[j] * (blocks.q[n * K + b * Q4_BLOCK + j] - 8);
        y[r * N + n] += s * blocks.scales[n * (K / Q4_BLOCK) + b] * dot;
      }
    }
  }
  return y;
}

async function run(ort: Ort, model: Uint8Array, feeds: Record<string, OrtTensorLike>): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(model);
  const tensors = Object.fromEntries(Object.entries(feeds).map(([name, t]) => [name, new ort.Tensor(t.type, t.data as never, t.dims)]));
  const out = await session.run(tensors);
  await session.release();
  return Object.values(out)[0].data as Float32Array;
}

interface OrtTensorLike {
  type: 'float32' | 'int64';
  data: Float32Array | BigInt64Array;
  dims: number[];
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

/*
 * The level is a minimum: onnxruntime-node's x86 CPU provider has an int8 kernel for it,
 * onnxruntime-web's WASM build computes it in float32 (its level-0 result), so a q4 graph at
 * level 4 gives slightly different logits in the browser than under Node.
 */
describe.each([
  ['onnxruntime-node', ortNode as Ort, 'int8'],
  ['onnxruntime-web (WASM)', ortWeb as unknown as Ort, 'float'],
] as const)('q4 kernels on %s', (_, ort, level4Arithmetic) => {
  const weights = randomFloats(K * N, 7, 0.1);
  const x = randomFloats(ROWS * K, 8);
  const feeds = { x: { type: 'float32' as const, data: x, dims: [ROWS, K] } };
  // |y| is ~0.3 here; float32 accumulation order alone stays under 1e-5.
  const TOLERANCE = 1e-5;

  it('MatMulNBits at accuracy level 0 computes with the dequantized Q4_0 weights', async () => {
    const y = await run(ort, projectionGraph(weights, { q4AccuracyLevel: 0 }), feeds);
    expect(maxAbsDiff(y, referenceFloat(x, weights))).toBeLessThan(TOLERANCE);
  });

  it(`MatMulNBits at accuracy level 4 computes ${level4Arithmetic === 'int8' ? 'Q4_0 × Q8_0 block products (int8 activations per block of 32)' : 'in float32'}`, async () => {
    const y = await run(ort, projectionGraph(weights, { q4AccuracyLevel: 4 }), feeds);
    const int8 = referenceInt8(x, weights);
    const float = referenceFloat(x, weights);
    expect(maxAbsDiff(int8, float)).toBeGreaterThan(1e-3); // the two meanings are told apart
    expect(maxAbsDiff(y, level4Arithmetic === 'int8' ? int8 : float)).toBeLessThan(TOLERANCE);
  });

  it('the embedding lookup (GatherBlockQuantized) returns the dequantized rows of the Q4_0 table', async () => {
    const vocab = 48;
    const table = randomFloats(vocab * K, 9);
    const g = new GraphBuilder('embedding');
    const ids = g.input('input_ids', OnnxDataType.INT64, ['batch', 'sequence']);
    const embedding = g.floats('embed', [vocab, K], table);
    g.node('Gather', [embedding, ids], { scope: '/embed', outputs: ['rows'] });
    g.output('rows', OnnxDataType.FLOAT, ['batch', 'sequence', K]);
    const graph = applyWeightDtype(g.build(), 'q4');
    expect(graph.nodes.map((node) => node.opType)).toEqual(['GatherBlockQuantized', 'Reshape']);
    const picked = [3, 0, 47, 3, 20, 11];
    const rows = await run(ort, encode(graph), {
      input_ids: { type: 'int64', data: BigInt64Array.from(picked.map(BigInt)), dims: [2, 3] },
    });
    const dequantized = dequantizeQ4Rows(quantizeQ4Rows(table, vocab, K, { float16Scales: false }));
    const expected = picked.flatMap((id) => [...dequantized.subarray(id * K, (id + 1) * K)]);
    expect(rows.length).toBe(expected.length);
    expect(maxAbsDiff(rows, expected)).toBe(0);
  });
});

describe('the q4 pass on a tied embedding', () => {
  it('lets the output projection (MatMulNBits) and the lookup (GatherBlockQuantized) read one 4-bit initializer, no float table left', () => {
    const vocab = 64;
    const g = new GraphBuilder('tied');
    const ids = g.input('input_ids', OnnxDataType.INT64, ['batch', 'sequence']);
    const embedding = g.floats('embed', [vocab, K], randomFloats(vocab * K, 10));
    const rows = g.op('Gather', [embedding, ids], '/embed');
    const head = g.op('Transpose', [embedding], '/lm_head', { perm: [1, 0] });
    g.node('MatMul', [rows, head], { scope: '/lm_head', outputs: ['logits'] });
    g.output('logits', OnnxDataType.FLOAT, ['batch', 'sequence', vocab]);
    const graph = applyWeightDtype(g.build(), 'q4');
    const gather = graph.nodes.find((node) => node.opType === 'GatherBlockQuantized')!;
    const matmul = graph.nodes.find((node) => node.opType === 'MatMulNBits')!;
    expect(gather.inputs[0]).toBe(matmul.inputs[1]);
    expect(graph.initializers.filter((t) => t.dataType === OnnxDataType.FLOAT && t.dims.length === 2)).toEqual([]);
    const qweight = graph.initializers.filter((t) => t.name === gather.inputs[0]);
    expect(qweight.map((t) => t.dims)).toEqual([[vocab, K / Q4_BLOCK, Q4_BLOCK / 2]]);
  });

  it('keeps the float table with q4Embedding "float"', () => {
    const g = new GraphBuilder('float-embedding');
    const ids = g.input('input_ids', OnnxDataType.INT64, ['batch', 'sequence']);
    const embedding = g.floats('embed', [8, K], randomFloats(8 * K, 11));
    g.node('Gather', [embedding, ids], { scope: '/embed', outputs: ['rows'] });
    g.output('rows', OnnxDataType.FLOAT, ['batch', 'sequence', K]);
    const graph = applyWeightDtype(g.build(), 'q4', { q4Embedding: 'float' });
    expect(graph.nodes.map((node) => node.opType)).toEqual(['Gather']);
  });
});
