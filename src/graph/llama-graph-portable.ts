/**
 * The `portable` decoder graph: standard ai.onnx opset-17 ops only, for runtimes without
 * onnxruntime's contrib ops. Interface and semantics: see llama-onnx-graph.ts.
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
import type { DecoderCheckpoint } from './decoder-checkpoint.js';
import { GraphBuilder } from './graph-builder.js';
import type { OnnxGraph } from './onnx-writer.js';
import { concatColumns, fusedQkvWeight, transpose } from './llama-weights.js';
import { buildGroupedAttentionBias } from './llama-attention-bias.js';
import { declareDecoderInputs, declareDecoderOutputs, lmHeadWeight } from './llama-graph-io.js';
import { hfRopeTables } from './rope.js';

export function buildPortableLlamaGraph(ckpt: DecoderCheckpoint, rmsNormEps: number): OnnxGraph {
  const { dim, hiddenDim, nHeads, nKvHeads, vocabSize, seqLen } = ckpt.header;
  const { headDim, kvDim } = ckpt;
  const group = nHeads / nKvHeads;
  const g = new GraphBuilder('llama2c_decoder');
  const { inputIds, attentionMask, positionIds, past } = declareDecoderInputs(g, ckpt);

  const embedding = g.floats('model.embed_tokens.weight', [vocabSize, dim], ckpt.tokenEmbedding);
  const eps = g.floatScalar('rms_norm_eps', rmsNormEps);
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
  const attentionBias = buildGroupedAttentionBias(g, inputIds, attentionMask, group);
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

    const presentKey = g.node('Concat', [past[i].key, k], {
      scope: attnScope,
      attributes: { axis: 2 },
      outputs: [`present.${i}.key`],
    })[0];
    const presentValue = g.node('Concat', [past[i].value, v], {
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
  g.node('MatMul', [finalNorm, lmHeadWeight(g, ckpt, embedding)], { scope: '/lm_head', outputs: ['logits'] });
  declareDecoderOutputs(g, ckpt);
  return g.build();
}

/** cos/sin rows [B, 1, S, d] for the given positions, from one gathered [cos | sin] table. */
function buildRopeRows(
  g: GraphBuilder,
  ckpt: DecoderCheckpoint,
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
