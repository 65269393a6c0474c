/**
 * The 135M-shaped fp32 step's weight products and nothing else: per layer the converter's
 * four projections (qkv 576×960, o 576×576, gate_up 576×3072, down 1536×576), then the tied
 * head (576×49152), 121 MatMuls chained through Slices (a projection's first `in` columns
 * feed the next). The same bytes a decode step reads, without norms, attention, rotary or
 * the KV cache: its time beside the whole step's is what everything but the weight products
 * costs. Seeded random weights scaled so activations stay near 1 (no denormals down the chain).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GraphBuilder } from '../../src/graph/graph-builder.js';
import { OnnxDataType, encodeOnnxModel } from '../../src/graph/onnx-writer.js';
import { applyWeightDtype } from '../../src/graph/weight-dtype.js';
import { benchModelCache, SMOLLM2_135M_SHAPE } from '../size-models.js';

const VERSION = 1;

/** Uniform in ±sqrt(3 / in): unit variance in, about unit variance out. */
function weights(rows: number, cols: number, seed: number): Float32Array {
  const out = new Float32Array(rows * cols);
  const bound = Math.sqrt(3 / rows);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < out.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = ((x >>> 0) / 2 ** 32 - 0.5) * 2 * bound;
  }
  return out;
}

/** `q4`: the same chain with the converter's q4 weights (MatMulNBits), the q4 step's weight products alone. */
export function buildMatMulChain(dtype: 'fp32' | 'q4' = 'fp32'): Uint8Array {
  const { dim, hiddenDim, nLayers, nHeads, nKvHeads, vocabSize } = SMOLLM2_135M_SHAPE;
  const qkv = dim + 2 * nKvHeads * (dim / nHeads);
  const g = new GraphBuilder('fp32-matmul-chain');
  let x = g.input('x', OnnxDataType.FLOAT, ['M', dim]);
  const firstColumns = (value: string, columns: number, scope: string) =>
    g.op('Slice', [value, g.int64Constant([0]), g.int64Constant([columns]), g.int64Constant([1])], scope);
  for (let layer = 0; layer < nLayers; layer++) {
    const scope = `/model/layers.${layer}`;
    const project = (name: string, input: string, rows: number, cols: number, seed: number) =>
      g.op('MatMul', [input, g.floats(`${scope}.${name}.weight`, [rows, cols], weights(rows, cols, seed))], `${scope}/${name}`);
    const attention = firstColumns(project('qkv_proj', x, dim, qkv, 4 * layer + 1), dim, scope);
    const attended = project('o_proj', attention, dim, dim, 4 * layer + 2);
    const gated = firstColumns(project('gate_up_proj', attended, dim, 2 * hiddenDim, 4 * layer + 3), hiddenDim, scope);
    x = project('down_proj', gated, hiddenDim, dim, 4 * layer + 4);
  }
  const logits = g.node('MatMul', [x, g.floats('lm_head.weight', [dim, vocabSize], weights(dim, vocabSize, 9999))], {
    scope: '/lm_head',
    outputs: ['logits'],
  })[0];
  g.output(logits, OnnxDataType.FLOAT, ['M', vocabSize]);
  return encodeOnnxModel({
    irVersion: 8,
    opsetVersion: 17,
    producerName: 'edge-llm-fp32-bound',
    producerVersion: '0',
    graph: applyWeightDtype(g.build(), dtype),
    ...(dtype === 'q4' ? { extraOpsets: { 'com.microsoft': 1 } } : {}),
  });
}

/** The chain's file in the bench model cache, written once (~540 MB fp32, ~70 MB q4). */
export function ensureMatMulChain(dtype: 'fp32' | 'q4' = 'fp32'): string {
  const path = join(benchModelCache(), `${dtype}-matmul-chain-v${VERSION}.onnx`);
  if (!existsSync(path)) {
    mkdirSync(benchModelCache(), { recursive: true });
    writeFileSync(path, buildMatMulChain(dtype));
  }
  return path;
}
