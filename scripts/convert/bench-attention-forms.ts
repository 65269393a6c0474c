/**
 * Ways to write a decode step's attention over an in-place KV cache in plain ONNX ops,
 * timed on onnxruntime-node: what the `inplace` flavour (llama-graph-inplace.ts) could use
 * instead of its grouped MatMuls. One graph per form, `LAYERS` layers of queries, cache and
 * bias fed as inputs (the rest of the decoder left out), forms run in turn each iteration so
 * load from other processes hits them alike; medians and minimums printed. Beside them a
 * ReduceSum over every cache slot, the cheapest pass over the same bytes onnxruntime makes.
 *
 * Forms (G query heads per kv head, S = 1):
 * - grouped: what the graph does: q [B, kv, G, d] × Kᵀ (Transpose folded into FusedMatMul),
 *   softmax, × V [B, kv, T, d]. One GEMM per (row, kv head), M = G.
 * - broadcast: q [B, kv, G, 1, d] against the cache Unsqueezed to [B, kv, 1, T, d]: one GEMM
 *   per (row, query head), M = 1 (MLAS's M = 1 kernels, no packing of the cache).
 * - kT / kT-broadcast: keys stored transposed, [B, kv, d, T] (a layout the engine could write).
 * - vT: values stored transposed too, context ᵀ = Vᵀ × probsᵀ.
 * - broadcast-fp16: the cache in float16 (half the bytes).
 *
 * Usage: npx tsx scripts/convert/bench-attention-forms.ts
 * Env: B (32), T (512), KV (4), G (2), D (8), LAYERS (5), ITERS (40), ONLY (comma list).
 */
import * as ort from 'onnxruntime-node';
import { GraphBuilder } from '../../src/graph/graph-builder.js';
import { encodeOnnxModel, OnnxDataType } from '../../src/graph/onnx-writer.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const B = env('B', 32);
const T = env('T', 512);
const KV = env('KV', 4);
const G = env('G', 2);
const D = env('D', 8);
const LAYERS = env('LAYERS', 5);
const ITERS = env('ITERS', 40);
const SCOPE = 'attention';

interface Form {
  keysTransposed?: boolean;
  valuesTransposed?: boolean;
  half?: boolean;
  /** The layer's context (or any output reading every slot) from q [B, kv, G, d], the cache and bias [B, 1, G, T]. */
  build(g: GraphBuilder, q: string, k: string, v: string, bias: string): string;
}

const unsqueeze = (g: GraphBuilder, x: string, axis: number) => g.op('Unsqueeze', [x, g.int64Constant([axis])], SCOPE);
const transposeLast = (g: GraphBuilder, x: string, rank: number) =>
  g.op('Transpose', [x], SCOPE, { perm: [...Array.from({ length: rank - 2 }, (_, i) => i), rank - 1, rank - 2] });
const softmax = (g: GraphBuilder, scores: string, bias: string) => g.op('Softmax', [g.op('Add', [scores, bias], SCOPE)], SCOPE, { axis: -1 });
const queryPerHead = (g: GraphBuilder, q: string) => g.op('Reshape', [q, g.int64Constant([0, KV, G, 1, D])], SCOPE);

const FORMS: Record<string, Form> = {
  grouped: {
    build: (g, q, k, v, bias) => g.op('MatMul', [softmax(g, g.op('MatMul', [q, transposeLast(g, k, 4)], SCOPE), bias), v], SCOPE),
  },
  broadcast: {
    build: (g, q, k, v, bias) => {
      const scores = g.op('MatMul', [queryPerHead(g, q), transposeLast(g, unsqueeze(g, k, 2), 5)], SCOPE);
      return g.op('MatMul', [softmax(g, scores, unsqueeze(g, bias, 3)), unsqueeze(g, v, 2)], SCOPE);
    },
  },
  kT: {
    keysTransposed: true,
    build: (g, q, k, v, bias) => g.op('MatMul', [softmax(g, g.op('MatMul', [q, k], SCOPE), bias), v], SCOPE),
  },
  'kT-broadcast': {
    keysTransposed: true,
    build: (g, q, k, v, bias) => {
      const scores = g.op('MatMul', [queryPerHead(g, q), unsqueeze(g, k, 2)], SCOPE);
      return g.op('MatMul', [softmax(g, scores, unsqueeze(g, bias, 3)), unsqueeze(g, v, 2)], SCOPE);
    },
  },
  vT: {
    keysTransposed: true,
    valuesTransposed: true,
    build: (g, q, k, v, bias) => g.op('MatMul', [v, transposeLast(g, softmax(g, g.op('MatMul', [q, k], SCOPE), bias), 4)], SCOPE),
  },
  'broadcast-fp16': {
    half: true,
    build: (g, q, k, v, bias) => {
      const toHalf = (x: string) => g.op('Cast', [x], SCOPE, { to: OnnxDataType.FLOAT16 });
      const toFloat = (x: string) => g.op('Cast', [x], SCOPE, { to: OnnxDataType.FLOAT });
      const scores = toFloat(g.op('MatMul', [toHalf(queryPerHead(g, q)), transposeLast(g, unsqueeze(g, k, 2), 5)], SCOPE));
      return toFloat(g.op('MatMul', [toHalf(softmax(g, scores, unsqueeze(g, bias, 3))), unsqueeze(g, v, 2)], SCOPE));
    },
  },
  'reduce-sum (bytes floor)': {
    build: (g, _q, k, v) => {
      const sum = (x: string) => g.op('ReduceSum', [x, g.int64Constant([2])], SCOPE, { keepdims: 1 });
      return g.op('Add', [sum(k), sum(v)], SCOPE);
    },
  },
};

function filled(length: number, seed: number): Float32Array {
  const values = new Float32Array(length);
  for (let i = 0; i < length; i++) values[i] = Math.sin(i * 0.1 + seed);
  return values;
}

async function session(form: Form): Promise<{ session: ort.InferenceSession; feeds: Record<string, ort.Tensor> }> {
  const g = new GraphBuilder('attention_forms');
  const feeds: Record<string, ort.Tensor> = {};
  const cacheType = form.half ? OnnxDataType.FLOAT16 : OnnxDataType.FLOAT;
  const cacheTensor = (values: Float32Array, dims: number[]) =>
    form.half ? new ort.Tensor('float16', new Uint16Array(values.length).fill(0x3c00), dims) : new ort.Tensor('float32', values, dims);
  const bias = g.input('bias', OnnxDataType.FLOAT, [B, 1, G, T]);
  feeds[bias] = new ort.Tensor('float32', new Float32Array(B * G * T), [B, 1, G, T]);
  for (let layer = 0; layer < LAYERS; layer++) {
    const keyDims = form.keysTransposed ? [B, KV, D, T] : [B, KV, T, D];
    const valueDims = form.valuesTransposed ? [B, KV, D, T] : [B, KV, T, D];
    const q = g.input(`q.${layer}`, OnnxDataType.FLOAT, [B, KV, G, D]);
    const k = g.input(`k.${layer}`, cacheType, keyDims);
    const v = g.input(`v.${layer}`, cacheType, valueDims);
    feeds[q] = new ort.Tensor('float32', filled(B * KV * G * D, layer), [B, KV, G, D]);
    feeds[k] = cacheTensor(filled(B * KV * T * D, layer + 0.5), keyDims);
    feeds[v] = cacheTensor(filled(B * KV * T * D, layer + 0.7), valueDims);
    const [out] = g.node('Identity', [form.build(g, q, k, v, bias)], { scope: SCOPE, outputs: [`out.${layer}`] });
    g.output(out, OnnxDataType.FLOAT, []);
  }
  const model = encodeOnnxModel({ irVersion: 8, opsetVersion: 17, producerName: 'bench-attention-forms', producerVersion: '0', graph: g.build() });
  const options = { logSeverityLevel: 3, graphOptimizationLevel: 'all', executionMode: 'sequential', intraOpNumThreads: 1 } as const;
  return { session: await ort.InferenceSession.create(model, options), feeds };
}

async function main(): Promise<void> {
  const only = process.env.ONLY?.split(',');
  const names = Object.keys(FORMS).filter((name) => only === undefined || only.includes(name));
  const runs = await Promise.all(names.map((name) => session(FORMS[name])));
  const times = names.map(() => [] as number[]);
  for (let iteration = 0; iteration < ITERS + 3; iteration++) {
    for (const [index, { session, feeds }] of runs.entries()) {
      const start = performance.now();
      await session.run(feeds);
      if (iteration >= 3) times[index].push(performance.now() - start);
    }
  }
  const sorted = times.map((t) => [...t].sort((a, b) => a - b));
  console.log(`B=${B} T=${T} kv=${KV} G=${G} d=${D}, ${LAYERS} layers: ms per run`);
  names.forEach((name, index) => {
    console.log(`${name.padEnd(26)} median ${sorted[index][sorted[index].length >> 1].toFixed(3)}  min ${sorted[index][0].toFixed(3)}`);
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
