/**
 * The decoder skeleton the contrib-op flavours share: embedding, a residual stream whose
 * Adds are folded into com.microsoft SkipSimplifiedLayerNormalization (residual add and the
 * next RMSNorm in one node), the SwiGLU MLP and the tied output projection. Each flavour
 * supplies only its attention block.
 */
import type { DecoderCheckpoint, DecoderLayer, MixtureOfExperts } from './decoder-checkpoint.js';
import { GraphBuilder } from './graph-builder.js';
import type { OnnxGraph } from './onnx-writer.js';
import { concatColumns, transpose } from './llama-weights.js';
import { declareDecoderInputs, declareDecoderOutputs, declareNewKvOutputs, lmHeadWeight, type DecoderInputs } from './llama-graph-io.js';

export const MS_DOMAIN = 'com.microsoft';

export interface AttentionArgs {
  layer: DecoderLayer;
  index: number;
  /** RMSNorm'd hidden states [B, S, dim]. */
  xNorm: string;
  /** Node-name scope of the layer's attention, e.g. /model/layers.3/self_attn. */
  scope: string;
  /** Initializer name prefix, e.g. model.layers.3. */
  prefix: string;
}

/** Builds one layer's attention: returns its output [B, S, dim] before the residual add. */
export type AttentionBlock = (args: AttentionArgs) => string;

export function buildSkipNormDecoder(
  ckpt: DecoderCheckpoint,
  rmsNormEps: number,
  attentionFor: (g: GraphBuilder, inputs: DecoderInputs) => AttentionBlock,
  /** present.* (past + new, the HF contract) or new_key_values (the new slots only, llama-graph-io.ts). */
  kvOutputs: 'present' | 'new' = 'present',
): OnnxGraph {
  const { dim, vocabSize } = ckpt.header;
  const g = new GraphBuilder('llama2c_decoder');
  const inputs = declareDecoderInputs(g, ckpt);
  const epsilon = { float: rmsNormEps };
  const embedding = g.floats('model.embed_tokens.weight', [vocabSize, dim], ckpt.tokenEmbedding);
  const attention = attentionFor(g, inputs);

  const hidden0 = g.op('Gather', [embedding, inputs.inputIds], '/model/embed_tokens');
  // Layer 0's input norm has no residual to add yet.
  const firstNormWeight = g.floats('model.layers.0.input_layernorm.weight', [dim], ckpt.layers[0].rmsAtt);
  let xNorm = g.op('SimplifiedLayerNormalization', [hidden0, firstNormWeight], '/model/layers.0/input_layernorm', {
    axis: -1,
    epsilon,
  });
  let residual = hidden0;
  let pendingDelta: string | null = null; // the previous MLP's output, not yet added to `residual`

  ckpt.layers.forEach((layer, index) => {
    const scope = `/model/layers.${index}`;
    const prefix = `model.layers.${index}`;
    if (pendingDelta !== null) {
      const w = g.floats(`${prefix}.input_layernorm.weight`, [dim], layer.rmsAtt);
      [xNorm, residual] = skipNorm(g, pendingDelta, residual, w, epsilon, `${scope}/input_layernorm`);
    }
    const attnOut = attention({ layer, index, xNorm, scope: `${scope}/self_attn`, prefix });
    const postNormW = g.floats(`${prefix}.post_attention_layernorm.weight`, [dim], layer.rmsFfn);
    const [hNorm, afterAttn] = skipNorm(g, attnOut, residual, postNormW, epsilon, `${scope}/post_attention_layernorm`);
    residual = afterAttn;
    pendingDelta = swigluMlp(g, ckpt, layer, hNorm, `${scope}/mlp`, `${prefix}.mlp`);
  });

  const finalW = g.floats('model.norm.weight', [dim], ckpt.rmsFinal);
  const [finalNorm] = skipNorm(g, pendingDelta!, residual, finalW, epsilon, '/model/norm');
  g.node('MatMul', [finalNorm, lmHeadWeight(g, ckpt, embedding)], { scope: '/lm_head', outputs: ['logits'] });
  if (kvOutputs === 'present') declareDecoderOutputs(g, ckpt);
  else declareNewKvOutputs(g, ckpt);
  return g.build();
}

/** RMSNorm(delta + residual), and the sum itself (the new residual stream): one com.microsoft node. */
export function skipNorm(
  g: GraphBuilder,
  delta: string,
  residual: string,
  weight: string,
  epsilon: { float: number },
  scope: string,
): [normed: string, sum: string] {
  const name = `${scope}/SkipSimplifiedLayerNormalization`;
  const [normed, , , sum] = g.node('SkipSimplifiedLayerNormalization', [delta, residual, weight], {
    scope,
    domain: MS_DOMAIN,
    attributes: { epsilon },
    outputs: [`${name}_output_0`, '', '', `${name}_output_3`],
  });
  return [normed, sum];
}

/** down(silu(gate(x)) * up(x)), gate and up from one fused MatMul. */
function swigluMlp(
  g: GraphBuilder,
  ckpt: DecoderCheckpoint,
  layer: DecoderLayer,
  x: string,
  scope: string,
  prefix: string,
): string {
  if (layer.experts) return mixtureOfExperts(g, ckpt.header.dim, layer.experts, x, scope, prefix);
  return denseSwiglu(g, ckpt.header.dim, { hidden: ckpt.header.hiddenDim, gate: layer.w1, up: layer.w3, down: layer.w2 }, x, scope, prefix);
}

/** The SwiGLU MLP on `x` [..., dim]: gate and up rows [hidden, dim], down [dim, hidden]. */
function denseSwiglu(
  g: GraphBuilder,
  dim: number,
  { hidden, gate: w1, up: w3, down: w2 }: { hidden: number; gate: Float32Array; up: Float32Array; down: Float32Array },
  x: string,
  scope: string,
  prefix: string,
): string {
  const gateUp = concatColumns([transpose(w1, hidden, dim), transpose(w3, hidden, dim)], dim);
  const gateUpW = g.floats(`${prefix}.gate_up_proj.weight`, [dim, 2 * hidden], gateUp);
  const gateUpOut = g.op('MatMul', [x, gateUpW], scope, undefined, 'gate_up_proj/MatMul');
  const [gate, up] = g.node('Split', [gateUpOut, g.int64Constant([hidden, hidden])], {
    scope,
    attributes: { axis: -1 },
    outputs: 2,
  });
  // onnxruntime fuses x * Sigmoid(x) into one QuickGelu node.
  const sig = g.op('Sigmoid', [gate], scope, undefined, 'act_fn/Sigmoid');
  const silu = g.op('Mul', [gate, sig], scope, undefined, 'act_fn/Mul');
  const gated = g.op('Mul', [silu, up], scope);
  const w2T = g.floats(`${prefix}.down_proj.weight`, [hidden, dim], transpose(w2, dim, hidden));
  return g.op('MatMul', [gated, w2T], scope, undefined, 'down_proj/MatMul');
}

/**
 * The experts' MLP as onnxruntime's own com.microsoft MoE kernel runs it (CPU and WASM:
 * scripts/gguf/moe-kernel-probe.ts): router logits in, softmax over every expert, the top
 * `used`, renormalised where the model does, each expert's down(silu(gate(x)) * up(x)) with
 * gate and up rows interleaved (swiglu_fusion 1; alpha 1, beta 0 make its SwiGLU silu(g)·u);
 * a shared expert (Qwen2 MoE) in plain ops beside it.
 */
function mixtureOfExperts(g: GraphBuilder, dim: number, moe: MixtureOfExperts, x: string, scope: string, prefix: string): string {
  const { count, hidden } = moe;
  // The kernel takes rows [tokens, dim]: the batch's positions flattened, then put back.
  const rows = g.op('Reshape', [x, g.int64Constant([-1, dim])], scope);
  const logits = g.op('MatMul', [rows, g.floats(`${prefix}.gate.weight`, [dim, count], transpose(moe.router, count, dim))], scope, undefined, 'gate/MatMul');
  const gate = moe.gate;
  const up = moe.up;
  const fc1 = new Float32Array(count * 2 * hidden * dim);
  for (let e = 0; e < count; e++) {
    for (let j = 0; j < hidden; j++) {
      const from = (e * hidden + j) * dim;
      fc1.set(gate.subarray(from, from + dim), (e * 2 * hidden + 2 * j) * dim);
      fc1.set(up.subarray(from, from + dim), (e * 2 * hidden + 2 * j + 1) * dim);
    }
  }
  const fc1W = g.floats(`${prefix}.experts.gate_up_proj`, [count, 2 * hidden, dim], fc1);
  const fc2W = g.floats(`${prefix}.experts.down_proj`, [count, dim, hidden], moe.down);
  const attributes = { k: moe.used, activation_type: 'swiglu', swiglu_fusion: 1, activation_alpha: { float: 1 }, activation_beta: { float: 0 }, normalize_routing_weights: moe.normalize ? 1 : 0 };
  const [routed] = g.node('MoE', [rows, logits, fc1W, '', fc2W], { scope, domain: MS_DOMAIN, attributes, label: 'experts/MoE' });
  let out = routed;
  if (moe.shared) {
    // Qwen2 MoE: + sigmoid(gateInput · x) * shared_expert(x), every token.
    const sharedScope = `${scope}/shared_expert`;
    const shared = denseSwiglu(g, dim, moe.shared, rows, sharedScope, `${prefix}.shared_expert`);
    const gateW = g.floats(`${prefix}.shared_expert_gate.weight`, [dim, 1], moe.shared.gateInput);
    const weight = g.op('Sigmoid', [g.op('MatMul', [rows, gateW], sharedScope, undefined, 'gate/MatMul')], sharedScope);
    out = g.op('Add', [routed, g.op('Mul', [shared, weight], sharedScope)], scope);
  }
  return g.op('Reshape', [out, g.op('Shape', [x], scope)], scope);
}

/**
 * The shape constants a fused attention block reshapes and splits by: the projection's
 * [B, S, heads, d] view, its split into q|k and v and of q|k into q and k, the grouped query
 * view [B, kv heads, group × S, d], the heads view, and the merged [B, S, q width] output.
 */
export function attentionShapeConstants(g: GraphBuilder, nHeads: number, nKvHeads: number, headDim: number) {
  return {
    qkvShape: g.int64Constant([0, 0, nHeads + 2 * nKvHeads, headDim]),
    qkvSplit: g.int64Constant([nHeads + nKvHeads, nKvHeads]),
    qkSplit: g.int64Constant([nHeads, nKvHeads]),
    groupedQueryShape: g.int64Constant([0, nKvHeads, -1, headDim]),
    headsShape: g.int64Constant([0, nHeads, -1, headDim]),
    mergedShape: g.int64Constant([0, 0, nHeads * headDim]),
  };
}
