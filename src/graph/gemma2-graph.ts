/**
 * The Gemma 2 and Gemma 3 text decoders (transformers' Gemma2ForCausalLM / Gemma3ForCausalLM,
 * llama.cpp's src/models/gemma2.cpp / gemma3.cpp) in the converter's graph interface (llama-graph-io.ts), flavours `fused` (the Hugging Face
 * contract: present = concat(past, new)) and `inplace` (the engine's own cache, written in
 * place: llama-graph-inplace.ts explains the contract). What differs from llama's decoder:
 * - the embedding rows are multiplied by sqrt(hidden) on the way in (not on the tied head);
 * - four RMSNorms a layer: before attention, after it (before the residual add), before the
 *   MLP and after it; weights as llama.cpp stores them (transformers' 1 + w already added);
 * - the MLP is gelu_tanh(gate(x)) * up(x) (com.microsoft FastGelu: the tanh approximation);
 * - attention scores are q·k * query scale, then soft-capped: tanh(s / cap) * cap, before the
 *   mask and the softmax; the logits likewise with their own cap;
 * - heads may be wider than hidden / heads (gemma-2-2b: 8 heads of 256 on 2304), so q and the
 *   attention output are heads * head_dim wide.
 * - sliding-window layers (every other one in Google's Gemma 2 files, five of six in Gemma 3's)
 *   mask keys `window` or more positions back, as llama.cpp (its SWA "standard" mask) and
 *   transformers do.
 * Gemma 3 beside that: per-head RMSNorms of q and k before RoPE (q_norm / k_norm), its own
 * rope base (and no scaling) on the sliding layers, and no attention soft-cap (the final one
 * only where the file sets it).
 */
import type { DecoderHeader } from './decoder-checkpoint.js';
import { GraphBuilder } from './graph-builder.js';
import type { OnnxGraph } from './onnx-writer.js';
import { concatColumns, transpose } from './llama-weights.js';
import { buildGroupedAttentionBias } from './llama-attention-bias.js';
import { attentionShapeConstants, MS_DOMAIN, skipNorm } from './llama-graph-blocks.js';
import { declareDecoderInputs, declareDecoderOutputs, declareNewKvOutputs, MASK_BIAS, newKvName, type DecoderInputs } from './llama-graph-io.js';
import { withLogitsToKeep } from './logits-to-keep.js';

export interface Gemma2Layer {
  /** [dim] each, as llama.cpp stores them: transformers' (1 + weight). */
  inputNorm: Float32Array;
  postAttentionNorm: Float32Array;
  preFeedforwardNorm: Float32Array;
  postFeedforwardNorm: Float32Array;
  /** nn.Linear [out, in]; q and k rows in rotate-half (Hugging Face) order within each head. */
  wq: Float32Array; // [heads * headDim, dim]
  wk: Float32Array; // [kvDim, dim]
  wv: Float32Array; // [kvDim, dim]
  wo: Float32Array; // [dim, heads * headDim]
  gate: Float32Array; // [hidden, dim]
  up: Float32Array; // [hidden, dim]
  down: Float32Array; // [dim, hidden]
  /** Gemma 3: RMSNorm weights over each q and each k head [headDim], as llama.cpp stores them (1 + w). */
  qNorm?: Float32Array;
  kNorm?: Float32Array;
}

export interface Gemma2Checkpoint {
  family: 'gemma2' | 'gemma3';
  /** sharedClassifier is always true: the head is the embedding. */
  header: DecoderHeader;
  headDim: number;
  kvDim: number;
  tokenEmbedding: Float32Array; // [vocab, dim]
  layers: Gemma2Layer[];
  finalNorm: Float32Array; // [dim]
  /** RoPE cos / sin [seqLen, headDim / 2]. */
  ropeCos: Float32Array;
  ropeSin: Float32Array;
  /** Gemma 3: the sliding layers' tables (their own base, no scaling); the others use ropeCos / ropeSin. */
  slidingRope?: { cos: Float32Array; sin: Float32Array };
  embeddingScale: number;
  queryScale: number;
  /** null: no soft-cap (Gemma 3's attention; its logits unless the file sets one). */
  attentionSoftcap: number | null;
  finalSoftcap: number | null;
  /** Keys this many positions back or more are masked on the layers marked here (by index). */
  slidingWindow: number;
  slidingLayers: boolean[];
}

export type Gemma2GraphOps = 'fused' | 'inplace';

export function buildGemma2Graph(ckpt: Gemma2Checkpoint, rmsNormEps: number, ops: string, options: { logitsToKeep?: boolean } = {}): OnnxGraph {
  if (ops !== 'fused' && ops !== 'inplace') throw new Error(`${ckpt.family} is built in the fused and inplace flavours only, not ${ops}`);
  const { dim, hiddenDim, vocabSize } = ckpt.header;
  const g = new GraphBuilder(`${ckpt.family}_decoder`);
  const inputs = declareDecoderInputs(g, ckpt);
  const epsilon = { float: rmsNormEps };
  const norm = (x: string, weight: Float32Array, name: string, scope: string) =>
    g.op('SimplifiedLayerNormalization', [x, g.floats(name, [dim], weight)], scope, { axis: -1, epsilon });
  const attention = gemma2Attention(g, ckpt, inputs, ops, rmsNormEps);
  const mlpSplit = g.int64Constant([hiddenDim, hiddenDim]);

  const embedding = g.floats('model.embed_tokens.weight', [vocabSize, dim], ckpt.tokenEmbedding);
  const rows = g.op('Gather', [embedding, inputs.inputIds], '/model/embed_tokens');
  let residual = g.op('Mul', [rows, g.floatScalar('embedding_scale', ckpt.embeddingScale)], '/model/embed_tokens', undefined, 'scale/Mul');
  let x = norm(residual, ckpt.layers[0].inputNorm, 'model.layers.0.input_layernorm.weight', '/model/layers.0/input_layernorm');
  let pendingDelta: string | null = null; // the previous layer's normed MLP output, not yet added to `residual`

  ckpt.layers.forEach((layer, index) => {
    const scope = `/model/layers.${index}`;
    const prefix = `model.layers.${index}`;
    if (pendingDelta !== null) {
      [x, residual] = skipNorm(g, pendingDelta, residual, g.floats(`${prefix}.input_layernorm.weight`, [dim], layer.inputNorm), epsilon, `${scope}/input_layernorm`);
    }
    const attnOut = attention(layer, index, x, `${scope}/self_attn`, prefix);
    const attnNormed = norm(attnOut, layer.postAttentionNorm, `${prefix}.post_attention_layernorm.weight`, `${scope}/post_attention_layernorm`);
    const preFfw = g.floats(`${prefix}.pre_feedforward_layernorm.weight`, [dim], layer.preFeedforwardNorm);
    const [h, afterAttention] = skipNorm(g, attnNormed, residual, preFfw, epsilon, `${scope}/pre_feedforward_layernorm`);
    residual = afterAttention;

    const mlp = `${scope}/mlp`;
    const gateUp = concatColumns([transpose(layer.gate, hiddenDim, dim), transpose(layer.up, hiddenDim, dim)], dim);
    const projected = g.op('MatMul', [h, g.floats(`${prefix}.mlp.gate_up_proj.weight`, [dim, 2 * hiddenDim], gateUp)], mlp, undefined, 'gate_up_proj/MatMul');
    const [gate, up] = g.node('Split', [projected, mlpSplit], { scope: mlp, attributes: { axis: -1 }, outputs: 2 });
    const activated = g.node('FastGelu', [gate], { scope: mlp, domain: MS_DOMAIN, label: 'act_fn/FastGelu' })[0];
    const downW = g.floats(`${prefix}.mlp.down_proj.weight`, [hiddenDim, dim], transpose(layer.down, dim, hiddenDim));
    const down = g.op('MatMul', [g.op('Mul', [activated, up], mlp), downW], mlp, undefined, 'down_proj/MatMul');
    pendingDelta = norm(down, layer.postFeedforwardNorm, `${prefix}.post_feedforward_layernorm.weight`, `${scope}/post_feedforward_layernorm`);
  });

  const [finalNorm] = skipNorm(g, pendingDelta!, residual, g.floats('model.norm.weight', [dim], ckpt.finalNorm), epsilon, '/model/norm');
  const head = g.op('Transpose', [embedding], '/lm_head', { perm: [1, 0] });
  g.node('MatMul', [finalNorm, head], { scope: '/lm_head', outputs: ['logits'] });
  if (ops === 'fused') declareDecoderOutputs(g, ckpt);
  else declareNewKvOutputs(g, ckpt);
  // num_logits_to_keep slices the hidden states before the head; the cap goes after it.
  const graph = options.logitsToKeep === false ? g.build() : withLogitsToKeep(g.build());
  return ckpt.finalSoftcap === null ? graph : withFinalSoftcap(graph, ckpt.finalSoftcap);
}

/** tanh(x * prescale / cap) * cap (llama.cpp's and transformers' soft-capping after a scale), three nodes. */
function softcap(g: GraphBuilder, x: string, cap: number, scope: string, labels: { prescale: string; cap: string }, prescale = 1, output?: string): string {
  const scaled = g.op('Mul', [x, g.floatScalar(labels.prescale, prescale / cap)], scope, undefined, 'softcap/Mul');
  const bounded = g.op('Tanh', [scaled], scope, undefined, 'softcap/Tanh');
  return g.node('Mul', [bounded, g.floatScalar(labels.cap, cap)], { scope, label: 'softcap/Mul_1', ...(output ? { outputs: [output] } : {}) })[0];
}

/**
 * The graph with its `logits` output soft-capped: the head's MatMul writes `logits/uncapped`
 * (after withLogitsToKeep, which slices the head's input, so the cap runs on kept rows only).
 */
function withFinalSoftcap(graph: OnnxGraph, cap: number): OnnxGraph {
  const uncapped = 'logits/uncapped';
  const nodes = graph.nodes.map((node) => (node.outputs.includes('logits') ? { ...node, outputs: node.outputs.map((o) => (o === 'logits' ? uncapped : o)) } : node));
  const g = new GraphBuilder('final_softcap');
  softcap(g, uncapped, cap, '/lm_head', { prescale: 'final_softcap_inverse', cap: 'final_softcap' }, 1, 'logits');
  const capped = g.build();
  return { ...graph, nodes: [...nodes, ...capped.nodes], initializers: [...graph.initializers, ...capped.initializers] };
}

type Gemma2Attention = (layer: Gemma2Layer, index: number, x: string, scope: string, prefix: string) => string;

/**
 * One layer's attention → its o_proj output. q, k and v come from one MatMul, q and k are
 * rotated by one com.microsoft RotaryEmbedding, the query heads sharing a kv head run as one
 * matrix ([B, kv, group * S, d], as llama-graph-fused.ts does) and the scores are scaled
 * and soft-capped in one Mul / Tanh / Mul before the shared mask bias.
 */
function gemma2Attention(g: GraphBuilder, ckpt: Gemma2Checkpoint, inputs: DecoderInputs, ops: Gemma2GraphOps, rmsNormEps: number): Gemma2Attention {
  const { dim, nHeads, nKvHeads, seqLen } = ckpt.header;
  const { headDim, kvDim } = ckpt;
  const qDim = nHeads * headDim;
  const fullBias = buildGroupedAttentionBias(g, inputs.inputIds, inputs.attentionMask, nHeads / nKvHeads);
  const windowBias = ckpt.slidingLayers.some(Boolean) ? slidingWindowBias(g, inputs, fullBias, ckpt.slidingWindow, nHeads / nKvHeads) : fullBias;
  const globalRope = { cos: g.floats('model.rotary_emb.cos_cache', [seqLen, headDim / 2], ckpt.ropeCos), sin: g.floats('model.rotary_emb.sin_cache', [seqLen, headDim / 2], ckpt.ropeSin) };
  const slidingRope = ckpt.slidingRope
    ? { cos: g.floats('model.rotary_emb_local.cos_cache', [seqLen, headDim / 2], ckpt.slidingRope.cos), sin: g.floats('model.rotary_emb_local.sin_cache', [seqLen, headDim / 2], ckpt.slidingRope.sin) }
    : globalRope;
  const { qkvShape, qkvSplit, qkSplit, groupedQueryShape, headsShape, mergedShape } = attentionShapeConstants(g, nHeads, nKvHeads, headDim);
  const transposeKeys = (keys: string, scope: string) => g.op('Transpose', [keys], scope, { perm: [0, 1, 3, 2] });
  const { attentionSoftcap } = ckpt;
  // With q/k norms and no cap, the query scale rides on q_norm's weight (headNorms); else on the scores.
  const scaleInQNorm = attentionSoftcap === null && ckpt.layers.every((layer) => layer.qNorm);
  const cappedScores = (scores: string, scope: string) =>
    attentionSoftcap !== null
      ? softcap(g, scores, attentionSoftcap, scope, { prescale: 'attention_scale_over_softcap', cap: 'attention_softcap' }, ckpt.queryScale)
      : scaleInQNorm
        ? scores
        : g.op('Mul', [scores, g.floatScalar('attention_scale', ckpt.queryScale)], scope, undefined, 'scale/Mul');
  const unitNorm = ckpt.layers.some((layer) => layer.qNorm) ? g.floats('model.qk_norm.unit', [headDim], new Float32Array(headDim).fill(1)) : '';
  // In place: the probabilities split between the cached slots and the fed tokens, [T, S].
  const probsSplit =
    ops === 'inplace'
      ? g.op('Concat', [g.op('Shape', [inputs.past[0].key], '/model/attention_split', { start: 2, end: 3 }), g.op('Shape', [inputs.inputIds], '/model/attention_split', { start: 1, end: 2 })], '/model/attention_split', { axis: 0 })
      : '';

  return (layer, index, x, scope, prefix) => {
    const qkvWeight = concatColumns([transpose(layer.wq, qDim, dim), transpose(layer.wk, kvDim, dim), transpose(layer.wv, kvDim, dim)], dim);
    const qkv = g.op('MatMul', [x, g.floats(`${prefix}.self_attn.qkv_proj.weight`, [dim, qDim + 2 * kvDim], qkvWeight)], scope, undefined, 'qkv_proj/MatMul');
    const headsFirst = g.op('Transpose', [g.op('Reshape', [qkv, qkvShape], scope)], scope, { perm: [0, 2, 1, 3] }); // [B, heads, S, d]
    const newNames = ops === 'inplace' ? { value: newKvName(index, 'value'), key: newKvName(index, 'key') } : null;
    const [qk, v] = g.node('Split', [headsFirst, qkvSplit], { scope, attributes: { axis: 1 }, outputs: newNames ? [`${scope}/Split_output_0`, newNames.value] : 2 });
    const normed = layer.qNorm && layer.kNorm ? headNorms(g, qk, layer.qNorm, layer.kNorm, unitNorm, { nHeads, nKvHeads, headDim, qScale: scaleInQNorm ? ckpt.queryScale : 1, epsilon: rmsNormEps }, scope, prefix) : qk;
    const rope = ckpt.slidingLayers[index] ? slidingRope : globalRope;
    const [rotated] = g.node('RotaryEmbedding', [normed, inputs.positionIds, rope.cos, rope.sin], { scope, domain: MS_DOMAIN, attributes: { interleaved: 0 } });
    const [q, k] = g.node('Split', [rotated, qkSplit], { scope, attributes: { axis: 1 }, outputs: newNames ? [`${scope}/Split_1_output_0`, newNames.key] : 2 });
    const qGrouped = g.op('Reshape', [q, groupedQueryShape], scope); // [B, kv, group*S, d]
    const past = inputs.past[index];
    const bias = ckpt.slidingLayers[index] ? windowBias : fullBias;
    let context: string;
    if (ops === 'fused') {
      const [keys] = g.node('Concat', [past.key, k], { scope, attributes: { axis: 2 }, outputs: [`present.${index}.key`] });
      const [values] = g.node('Concat', [past.value, v], { scope, attributes: { axis: 2 }, outputs: [`present.${index}.value`] });
      const scores = cappedScores(g.op('MatMul', [qGrouped, transposeKeys(keys, scope)], scope), scope);
      const probs = g.op('Softmax', [g.op('Add', [scores, bias], scope)], scope, { axis: -1 });
      context = g.op('MatMul', [probs, values], scope); // [B, kv, group*S, d]
    } else {
      const cached = g.op('MatMul', [qGrouped, transposeKeys(past.key, scope)], scope);
      const fresh = g.op('MatMul', [qGrouped, transposeKeys(k, scope)], scope);
      const scores = cappedScores(g.op('Concat', [cached, fresh], scope, { axis: -1 }), scope); // [B, kv, group*S, T + S]
      const probs = g.op('Softmax', [g.op('Add', [scores, bias], scope)], scope, { axis: -1 });
      const [cachedProbs, freshProbs] = g.node('Split', [probs, probsSplit], { scope, attributes: { axis: -1 }, outputs: 2 });
      context = g.op('Add', [g.op('MatMul', [cachedProbs, past.value], scope), g.op('MatMul', [freshProbs, v], scope)], scope);
    }
    const merged = g.op('Reshape', [g.op('Transpose', [g.op('Reshape', [context, headsShape], scope)], scope, { perm: [0, 2, 1, 3] }), mergedShape], scope);
    const woT = g.floats(`${prefix}.self_attn.o_proj.weight`, [qDim, dim], transpose(layer.wo, dim, qDim));
    return g.op('MatMul', [merged, woT], scope, undefined, 'o_proj/MatMul');
  };
}

/**
 * Gemma 3's q_norm / k_norm on q|k heads [B, heads + kv heads, S, d]: one RMSNorm over the
 * last axis with a unit weight, then one Mul by [heads + kv heads, 1, d] holding q_norm
 * (times the query scale, when it rides here) on each q head and k_norm on each k head —
 * llama.cpp's build_norm (rms_norm, then the weight) and transformers' Gemma3RMSNorm.
 * The file's rows are in rotate-half order already (llama.cpp's NEOX rope): no permutation.
 */
function headNorms(
  g: GraphBuilder,
  qk: string,
  qNorm: Float32Array,
  kNorm: Float32Array,
  unit: string,
  dims: { nHeads: number; nKvHeads: number; headDim: number; qScale: number; epsilon: number },
  scope: string,
  prefix: string,
): string {
  const { nHeads, nKvHeads, headDim, qScale } = dims;
  const weight = new Float32Array((nHeads + nKvHeads) * headDim);
  for (let h = 0; h < nHeads + nKvHeads; h++) {
    for (let i = 0; i < headDim; i++) weight[h * headDim + i] = h < nHeads ? qNorm[i] * qScale : kNorm[i];
  }
  const normed = g.op('SimplifiedLayerNormalization', [qk, unit], `${scope}/qk_norm`, { axis: -1, epsilon: { float: dims.epsilon } });
  return g.op('Mul', [normed, g.floats(`${prefix}.self_attn.qk_norm.weight`, [nHeads + nKvHeads, 1, headDim], weight)], `${scope}/qk_norm`);
}

/**
 * The bias of the sliding-window layers, [B, 1, group*S, T]: the full layers' bias, and
 * MASK_BIAS where the key is `window` or more positions before the query. A query's position
 * is its position_ids entry; a key slot's is the count of real slots before it in its row
 * (cumsum(attention_mask) - 1), because every cache the engine feeds holds a row's tokens in
 * position order from 0, padding and free slots masked (kv/in-place-kv.ts, kv/kv-cache.ts).
 */
function slidingWindowBias(g: GraphBuilder, inputs: DecoderInputs, fullBias: string, window: number, group: number): string {
  const scope = '/model/sliding_window_bias';
  const counted = g.op('CumSum', [inputs.attentionMask, g.int64Constant([1], true)], scope); // [B, T]
  const keyPositions = g.op('Sub', [counted, g.int64Constant([1], true)], scope);
  const distance = g.op('Sub', [g.op('Unsqueeze', [inputs.positionIds, g.int64Constant([2])], scope), g.op('Unsqueeze', [keyPositions, g.int64Constant([1])], scope)], scope); // [B, S, T]
  const inWindow = g.op('Less', [distance, g.int64Constant([window], true)], scope);
  const bias = g.op('Where', [inWindow, g.floatScalar('zero', 0), g.floatScalar('mask_bias', MASK_BIAS)], scope);
  const tiled = group > 1 ? g.op('Tile', [bias, g.int64Constant([1, group, 1])], scope) : bias;
  // Min, not Add: two MASK_BIAS would sum to -inf, and a row with nothing to see would then be NaN.
  return g.op('Min', [fullBias, g.op('Unsqueeze', [tiled, g.int64Constant([1])], scope)], scope);
}
