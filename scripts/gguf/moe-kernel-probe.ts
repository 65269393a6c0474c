/**
 * Does the pinned onnxruntime run Qwen's mixture-of-experts block in its own com.microsoft
 * MoE kernel? (issue #42: qwen2moe / qwen3moe.) Builds one MoE node — router logits in,
 * softmax over all experts, top-k, optionally renormalised (normalize_routing_weights, as
 * norm_topk_prob), SwiGLU with gate and up rows interleaved (swiglu_fusion 1) and
 * activation_alpha 1 / activation_beta 0 (silu(gate) * up, Qwen's MLP), fc1 [E, 2I, H] and
 * fc2 [E, H, I] — and compares it with the same block written out here, under
 * onnxruntime-node (CPU) and onnxruntime-web (WASM, run in Node).
 * Measured with 1.30.0: both agree within 1e-8 of outputs of 0.03 (relative 2e-7 at SCALE=200,
 * so no SwiGLU clamp by default).
 *
 * Usage: npx tsx scripts/gguf/moe-kernel-probe.ts   (SCALE=200 for large activations)
 */
import * as ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';
import { GraphBuilder } from '../../src/graph/graph-builder.js';
import { encodeOnnxModel, OnnxDataType } from '../../src/graph/onnx-writer.js';

const N = 3, H = 8, E = 4, I = 6, K = 2;
let seed = 1;
const rand = () => ((seed = (seed * 16807) % 2147483647) / 2147483647 - 0.5);
const fill = (n: number) => Float32Array.from({ length: n }, rand);
const x = fill(N * H).map((v) => v * Number(process.env.SCALE ?? 1)), logits = fill(N * E).map((v) => v * 4), fc1 = fill(E * 2 * I * H), fc2 = fill(E * H * I);

function reference(normalize: boolean): Float32Array {
  const out = new Float32Array(N * H);
  for (let t = 0; t < N; t++) {
    const row = logits.subarray(t * E, (t + 1) * E);
    const m = Math.max(...row); const ex = [...row].map((v) => Math.exp(v - m)); const s = ex.reduce((a, b) => a + b);
    const p = ex.map((v) => v / s);
    const top = p.map((v, i) => [v, i]).sort((a, b) => b[0] - a[0]).slice(0, K);
    const sum = top.reduce((a, [v]) => a + v, 0);
    for (const [w0, e] of top) {
      const w = normalize ? w0 / sum : w0;
      const act = new Float32Array(I);
      for (let j = 0; j < I; j++) {
        let g = 0, u = 0;
        for (let h = 0; h < H; h++) { g += fc1[((e * 2 * I) + 2 * j) * H + h] * x[t * H + h]; u += fc1[((e * 2 * I) + 2 * j + 1) * H + h] * x[t * H + h]; }
        act[j] = (g / (1 + Math.exp(-g))) * u;
      }
      for (let h = 0; h < H; h++) { let y = 0; for (let j = 0; j < I; j++) y += fc2[(e * H + h) * I + j] * act[j]; out[t * H + h] += w * y; }
    }
  }
  return out;
}

function model(normalize: number, quantized = false) {
  const g = new GraphBuilder('moe');
  g.input('x', OnnxDataType.FLOAT, [N, H]); g.input('router', OnnxDataType.FLOAT, [N, E]);
  g.node('MoE', ['x', 'router', g.floats('fc1', [E, 2 * I, H], fc1), '', g.floats('fc2', [E, H, I], fc2)], { scope: '/moe', domain: 'com.microsoft', outputs: ['y'], attributes: { k: K, activation_type: 'swiglu', swiglu_fusion: 1, activation_alpha: { float: 1 }, activation_beta: { float: 0 }, normalize_routing_weights: normalize } } as never);
  g.output('y', OnnxDataType.FLOAT, [N, H]);
  return encodeOnnxModel({ irVersion: 8, opsetVersion: 17, producerName: 'probe', producerVersion: '0', extraOpsets: { 'com.microsoft': 1 }, graph: g.build() });
}

for (const [name, ort] of [['onnxruntime-node', ortNode], ['onnxruntime-web (wasm)', ortWeb]] as const) {
  for (const normalize of [0, 1]) {
    try {
      const session = await (ort as typeof ortNode).InferenceSession.create(model(normalize));
      const out = await session.run({ x: new (ort as typeof ortNode).Tensor('float32', x, [N, H]), router: new (ort as typeof ortNode).Tensor('float32', logits, [N, E]) });
      const y = out.y.data as Float32Array; const r = reference(normalize === 1);
      console.log(name, 'normalize', normalize, 'max |diff|', Math.max(...y.map((v, i) => Math.abs(v - r[i]))), 'max |ref|', Math.max(...r.map(Math.abs)));
    } catch (error) { console.log(name, 'normalize', normalize, 'FAILED:', String((error as Error).message).slice(0, 300)); }
  }
}
