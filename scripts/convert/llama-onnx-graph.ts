/**
 * Builds the decoder graph in the layout of Optimum / transformers.js "with past" Llama
 * exports: inputs input_ids, attention_mask, position_ids, past_key_values.{i}.key/value;
 * outputs logits and present.{i}.key/value (present = concat(past, new) on the sequence
 * axis). Standard ai.onnx ops only, so onnxruntime-node and onnxruntime-web (WASM) both
 * run it.
 *
 * Node-count choices (per-node overhead dominates a step at this model size):
 * - the attention bias (causal AND attention_mask) and the cos/sin rows are computed once
 *   and shared by all layers;
 * - q, k, rotate_half(q), rotate_half(k) and v come from one MatMul whose weight has the
 *   rotation and the 1/sqrt(head_dim) score scale folded in, so RoPE is two Muls and an Add;
 * - grouped-query attention runs without repeating k/v: the query heads sharing a kv head
 *   are stacked on the sequence axis ([B, kv, group * S, d]), which is a plain Reshape in HF
 *   head order, and the bias is tiled to match once.
 * RMSNorm is spelled Pow/ReduceMean/Add/Sqrt/Div/Mul so onnxruntime fuses it.
 */
import type { Llama2cCheckpoint } from './llama2c-checkpoint.js';
import { GraphBuilder } from './graph-builder.js';
import { OnnxDataType, type OnnxGraph } from './onnx-writer.js';
import { concatColumns, fusedQkvWeight, transpose } from './llama-weights.js';
import { hfRopeTables } from './rope.js';

/** Additive bias for masked scores: float32 lowest, not -inf, so fully masked rows stay finite. */
export const MASK_BIAS = -3.4028234663852886e38;

export const DIM_NAMES = {
  batch: 'batch_size',
  sequence: 'sequence_length',
  past: 'past_sequence_length',
  total: 'past_sequence_length + sequence_length',
} as const;

export interface LlamaGraphOptions {
  rmsNormEps: number;
}

export function buildLlamaGraph(ckpt: Llama2cCheckpoint, options: LlamaGraphOptions): OnnxGraph {
  const { dim, hiddenDim, nLayers, nHeads, nKvHeads, vocabSize, seqLen } = ckpt.header;
  const { headDim, kvDim } = ckpt;
  const group = nHeads / nKvHeads;
  const g = new GraphBuilder('llama2c_decoder');
  const { batch, sequence, past, total } = DIM_NAMES;

  const inputIds = g.input('input_ids', OnnxDataType.INT64, [batch, sequence]);
  const attentionMask = g.input('attention_mask', OnnxDataType.INT64, [batch, total]);
  const positionIds = g.input('position_ids', OnnxDataType.INT64, [batch, sequence]);
  const pastInputs = Array.from({ length: nLayers }, (_, i) => ({
    key: g.input(`past_key_values.${i}.key`, OnnxDataType.FLOAT, [batch, nKvHeads, past, headDim]),
    value: g.input(`past_key_values.${i}.value`, OnnxDataType.FLOAT, [batch, nKvHeads, past, headDim]),
  }));

  const embedding = g.floats('model.embed_tokens.weight', [vocabSize, dim], ckpt.tokenEmbedding);
  const eps = g.floatScalar('rms_norm_eps', options.rmsNormEps);
  const two = g.floatScalar('two', 2);

  const rmsNorm = (x: string, weight: Float32Array, weightName: string, scope: string): string => {
    const w = g.floats(weightName, [dim], weight);
    const sq = g.op('Pow', [x, two], scope);
    const mean = g.op('ReduceMean', [sq], scope, { axes: [-1], keepdims: 1 });
    const shifted = g.op('Add', [mean, eps], scope);
    const rms = g.op('Sqrt', [shifted], scope);
    const normed = g.op('Div', [x, rms], scope);
    return g.op('Mul', [normed, w], scope);
  };

  // ---- shared across layers: attention bias and RoPE rows ----
  const attentionBias = buildAttentionBias(g, inputIds, attentionMask, group);
  const { cos, sin } = buildRopeRows(g, ckpt, positionIds, seqLen, headDim);

  let hidden = g.op('Gather', [embedding, inputIds], '/model/embed_tokens');

  const qkvShape = g.int64Constant([0, 0, 2 * (nHeads + nKvHeads) + nKvHeads, headDim]);
  const qkvSplit = g.int64Constant([nHeads + nKvHeads, nHeads + nKvHeads, nKvHeads]);
  const qkSplit = g.int64Constant([nHeads, nKvHeads]);
  const groupedQueryShape = g.int64Constant([0, nKvHeads, -1, headDim]);
  const headsShape = g.int64Constant([0, nHeads, -1, headDim]);
  const mergedShape = g.int64Constant([0, 0, dim]);
  const mlpSplit = g.int64Constant([hiddenDim, hiddenDim]);

  ckpt.layers.forEach((layer, i) => {
    const scope = `/model/layers.${i}`;
    const attnScope = `${scope}/self_attn`;
    const prefix = `model.layers.${i}`;

    // ---- attention ----
    const xNorm = rmsNorm(hidden, layer.rmsAtt, `${prefix}.input_layernorm.weight`, `${scope}/input_layernorm`);
    const qkvWeight = fusedQkvWeight(layer.wq, layer.wk, layer.wv, nHeads, nKvHeads, headDim, dim, kvDim);
    const qkvW = g.floats(`${prefix}.self_attn.qkv_rotary_proj.weight`, [dim, qkvWeight.length / dim], qkvWeight);
    const qkv = g.op('MatMul', [xNorm, qkvW], attnScope, undefined, 'qkv_proj/MatMul');
    const qkvHeads = g.op('Reshape', [qkv, qkvShape], attnScope);
    const headsFirst = g.op('Transpose', [qkvHeads], attnScope, { perm: [0, 2, 1, 3] }); // [B, heads, S, d]
    const [qk, qkRotated, v] = g.node('Split', [headsFirst, qkvSplit], {
      scope: attnScope,
      attributes: { axis: 1 },
      outputs: 3,
    });
    const qkCos = g.op('Mul', [qk, cos], attnScope, undefined, 'rotary/Mul');
    const qkSin = g.op('Mul', [qkRotated, sin], attnScope, undefined, 'rotary/Mul');
    const qkRope = g.op('Add', [qkCos, qkSin], attnScope, undefined, 'rotary/Add');
    const [q, k] = g.node('Split', [qkRope, qkSplit], { scope: attnScope, attributes: { axis: 1 }, outputs: 2 });

    const presentKey = g.node('Concat', [pastInputs[i].key, k], {
      scope: attnScope,
      attributes: { axis: 2 },
      outputs: [`present.${i}.key`],
    })[0];
    const presentValue = g.node('Concat', [pastInputs[i].value, v], {
      scope: attnScope,
      attributes: { axis: 2 },
      outputs: [`present.${i}.value`],
    })[0];

    const qGrouped = g.op('Reshape', [q, groupedQueryShape], attnScope); // [B, kv, group*S, d]
    const keyT = g.op('Transpose', [presentKey], attnScope, { perm: [0, 1, 3, 2] });
    const scores = g.op('MatMul', [qGrouped, keyT], attnScope);
    const biased = g.op('Add', [scores, attentionBias], attnScope);
    const probs = g.op('Softmax', [biased], attnScope, { axis: -1 });
    const context = g.op('MatMul', [probs, presentValue], attnScope); // [B, kv, group*S, d]
    const contextHeads = g.op('Reshape', [context, headsShape], attnScope); // [B, heads, S, d]
    const contextSeqFirst = g.op('Transpose', [contextHeads], attnScope, { perm: [0, 2, 1, 3] });
    const contextMerged = g.op('Reshape', [contextSeqFirst, mergedShape], attnScope);
    const woT = g.floats(`${prefix}.self_attn.o_proj.weight`, [dim, dim], transpose(layer.wo, dim, dim));
    const attnOut = g.op('MatMul', [contextMerged, woT], attnScope, undefined, 'o_proj/MatMul');
    hidden = g.op('Add', [hidden, attnOut], scope, undefined, 'residual_attn/Add');

    // ---- SwiGLU MLP ----
    const mlpScope = `${scope}/mlp`;
    const hNorm = rmsNorm(
      hidden,
      layer.rmsFfn,
      `${prefix}.post_attention_layernorm.weight`,
      `${scope}/post_attention_layernorm`,
    );
    const gateUp = concatColumns([transpose(layer.w1, hiddenDim, dim), transpose(layer.w3, hiddenDim, dim)], dim);
    const gateUpW = g.floats(`${prefix}.mlp.gate_up_proj.weight`, [dim, 2 * hiddenDim], gateUp);
    const gateUpOut = g.op('MatMul', [hNorm, gateUpW], mlpScope, undefined, 'gate_up_proj/MatMul');
    const [gate, up] = g.node('Split', [gateUpOut, mlpSplit], {
      scope: mlpScope,
      attributes: { axis: -1 },
      outputs: 2,
    });
    const sig = g.op('Sigmoid', [gate], mlpScope, undefined, 'act_fn/Sigmoid');
    const silu = g.op('Mul', [gate, sig], mlpScope, undefined, 'act_fn/Mul');
    const gated = g.op('Mul', [silu, up], mlpScope);
    const w2T = g.floats(`${prefix}.mlp.down_proj.weight`, [hiddenDim, dim], transpose(layer.w2, dim, hiddenDim));
    const down = g.op('MatMul', [gated, w2T], mlpScope, undefined, 'down_proj/MatMul');
    hidden = g.op('Add', [hidden, down], scope, undefined, 'residual_mlp/Add');
  });

  const finalNorm = rmsNorm(hidden, ckpt.rmsFinal, 'model.norm.weight', '/model/norm');
  // Tied classifier: reuse the embedding initializer; onnxruntime folds this Transpose at load.
  const classifier = ckpt.header.sharedClassifier
    ? g.op('Transpose', [embedding], '/lm_head', { perm: [1, 0] })
    : g.floats('lm_head.weight', [dim, vocabSize], transpose(ckpt.classifier, vocabSize, dim));
  g.node('MatMul', [finalNorm, classifier], { scope: '/lm_head', outputs: ['logits'] });

  g.output('logits', OnnxDataType.FLOAT, [batch, sequence, vocabSize]);
  for (let i = 0; i < nLayers; i++) {
    g.output(`present.${i}.key`, OnnxDataType.FLOAT, [batch, nKvHeads, total, headDim]);
    g.output(`present.${i}.value`, OnnxDataType.FLOAT, [batch, nKvHeads, total, headDim]);
  }
  return g.build();
}

/**
 * Bias [B, 1, group*S, T] added to every layer's scores: 0 where query q (absolute position
 * past + q) may see key k (k <= past + q and attention_mask[b, k] == 1), else MASK_BIAS.
 * Rows are tiled `group` times to match the grouped-query layout.
 */
function buildAttentionBias(g: GraphBuilder, inputIds: string, attentionMask: string, group: number): string {
  const scope = '/model/attention_bias';
  const one = g.int64Constant([1], true);
  const zero = g.int64Constant([0], true);
  const totalLen = g.op('Gather', [g.op('Shape', [attentionMask], scope), one], scope, { axis: 0 });
  const queryLen = g.op('Gather', [g.op('Shape', [inputIds], scope), one], scope, { axis: 0 });
  const pastLen = g.op('Sub', [totalLen, queryLen], scope);
  const keyPos = g.op('Range', [zero, totalLen, one], scope); // [T]
  const queryPos = g.op('Range', [pastLen, totalLen, one], scope); // [S]
  const queryCol = g.op('Unsqueeze', [queryPos, g.int64Constant([1])], scope); // [S, 1]
  const causal = g.op('LessOrEqual', [keyPos, queryCol], scope); // [S, T]
  const keep = g.op('Cast', [attentionMask], scope, { to: OnnxDataType.BOOL }); // [B, T]
  const keepRows = g.op('Unsqueeze', [keep, g.int64Constant([1])], scope); // [B, 1, T]
  const allowed = g.op('And', [causal, keepRows], scope); // [B, S, T]
  const bias = g.op('Where', [allowed, g.floatScalar('zero', 0), g.floatScalar('mask_bias', MASK_BIAS)], scope);
  const tiled = group > 1 ? g.op('Tile', [bias, g.int64Constant([1, group, 1])], scope) : bias;
  return g.op('Unsqueeze', [tiled, g.int64Constant([1])], scope); // [B, 1, group*S, T]
}

/** cos/sin rows [B, 1, S, d] for the given positions, from one gathered [cos | sin] table. */
function buildRopeRows(
  g: GraphBuilder,
  ckpt: Llama2cCheckpoint,
  positionIds: string,
  seqLen: number,
  headDim: number,
): { cos: string; sin: string } {
  const scope = '/model/rotary_emb';
  const { cos, sin } = hfRopeTables(ckpt.freqCisReal, ckpt.freqCisImag, seqLen, headDim);
  const table = concatColumns([cos, sin], seqLen);
  const tableName = g.floats('model.rotary_emb.cos_sin_table', [seqLen, 2 * headDim], table);
  const rows = g.op('Gather', [tableName, positionIds], scope); // [B, S, 2d]
  const rowsPerHead = g.op('Unsqueeze', [rows, g.int64Constant([1])], scope); // [B, 1, S, 2d]
  const [c, s] = g.node('Split', [rowsPerHead, g.int64Constant([headDim, headDim])], {
    scope,
    attributes: { axis: -1 },
    outputs: 2,
  });
  return { cos: c, sin: s };
}
