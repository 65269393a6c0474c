/**
 * The `fused` decoder graph (the default): the skeleton of llama-graph-blocks.ts, whose
 * com.microsoft SkipSimplifiedLayerNormalization nodes fold each residual Add into the next
 * RMSNorm, with attention from plain ops plus one com.microsoft RotaryEmbedding per layer.
 * Both onnxruntime-node and onnxruntime-web (WASM) run it.
 *
 * Why attention is not one GroupQueryAttention node (the `gqa` flavour): onnxruntime's CPU
 * kernel loops over (batch, query head) pairs with one tiny GEMM each and copies the cache
 * once per query head, so beyond a few concurrent streams it is slower than these batched
 * MatMuls, which run the query heads that share a kv head as one matrix: they are stacked
 * on the sequence axis ([B, kv_heads, group * S, d], a plain Reshape in HF head order) and
 * the shared bias is tiled to match once per step.
 *
 * q, k and v come from one MatMul (q pre-scaled by 1/sqrt(head_dim)); RotaryEmbedding rotates
 * q and k together at the positions in position_ids, from the checkpoint's own cos/sin tables.
 */
import type { DecoderCheckpoint, DecoderLayer } from './decoder-checkpoint.js';
import type { GraphBuilder } from './graph-builder.js';
import type { OnnxGraph } from './onnx-writer.js';
import { concatColumns, transpose } from './llama-weights.js';
import { buildGroupedAttentionBias } from './llama-attention-bias.js';
import { attentionShapeConstants, buildSkipNormDecoder, MS_DOMAIN, type AttentionBlock } from './llama-graph-blocks.js';
import type { DecoderInputs } from './llama-graph-io.js';
import { permuteRowsForHfRope } from './rope.js';
import { qkNormedHeads } from './llama-qk-norm.js';

export function buildFusedLlamaGraph(ckpt: DecoderCheckpoint, rmsNormEps: number): OnnxGraph {
  return buildSkipNormDecoder(ckpt, rmsNormEps, (g, inputs) => groupedAttention(g, ckpt, inputs));
}

/** Output names of a layer's value split and key split (default: the builder's own). */
export interface KvOutputNames {
  value?: string;
  key?: string;
}

/**
 * What the fused and in-place flavours share: the per-graph constants, q/k/v from one
 * MatMul rotated by one RotaryEmbedding, and the heads merged back through o_proj.
 */
export function fusedAttentionParts(g: GraphBuilder, ckpt: DecoderCheckpoint, inputs: DecoderInputs) {
  const { dim, nHeads, nKvHeads, seqLen } = ckpt.header;
  const { headDim, kvDim } = ckpt;
  const qDim = nHeads * headDim; // dim, except where head_dim is set apart (Qwen3)
  const attentionBias = buildGroupedAttentionBias(g, inputs.inputIds, inputs.attentionMask, nHeads / nKvHeads);
  // RotaryEmbedding's caches are [max_position, head_dim / 2]: exactly llama2.c's freq_cis tables.
  const cosCache = g.floats('model.rotary_emb.cos_cache', [seqLen, headDim / 2], ckpt.freqCisReal);
  const sinCache = g.floats('model.rotary_emb.sin_cache', [seqLen, headDim / 2], ckpt.freqCisImag);
  const { qkvShape, qkvSplit, qkSplit, groupedQueryShape, headsShape, mergedShape } = attentionShapeConstants(g, nHeads, nKvHeads, headDim);
  const scale = 1 / Math.sqrt(headDim);

  /** q|k and v heads [B, heads, S, d] from the projection's [B, S, heads, d]. */
  const splitHeads = (qkvHeads: string, scope: string, valueName: string | undefined) => {
    const headsFirst = g.op('Transpose', [qkvHeads], scope, { perm: [0, 2, 1, 3] }); // [B, heads, S, d]
    const [qk, v] = g.node('Split', [headsFirst, qkvSplit], {
      scope,
      attributes: { axis: 1 },
      outputs: valueName === undefined ? 2 : [`${scope}/Split_output_0`, valueName],
    });
    return { qk, v };
  };

  /** [B, heads, S, d] rotated q, k and v of the fed tokens. */
  const rotatedQkv = (layer: DecoderLayer, xNorm: string, scope: string, prefix: string, names: KvOutputNames = {}) => {
    // With a per-head norm after the projection, the scale goes on the norm's q rows instead (llama-qk-norm.ts).
    const qScale = layer.qkNorm ? 1 : scale;
    const q = permuteRowsForHfRope(layer.wq, nHeads, headDim, dim).map((x) => x * qScale);
    const k = permuteRowsForHfRope(layer.wk, nKvHeads, headDim, dim);
    const qkvWeight = concatColumns([transpose(q, qDim, dim), transpose(k, kvDim, dim), transpose(layer.wv, kvDim, dim)], dim);
    const qkvW = g.floats(`${prefix}.self_attn.qkv_proj.weight`, [dim, qDim + 2 * kvDim], qkvWeight);
    const projected = g.op('MatMul', [xNorm, qkvW], scope, undefined, 'qkv_proj/MatMul');
    // Biases get the rows' own re-layout: q's permuted and pre-scaled, k's permuted.
    const bias = layer.attentionBias;
    const qkv = bias
      ? g.op('Add', [projected, g.floats(`${prefix}.self_attn.qkv_proj.bias`, [qDim + 2 * kvDim], Float32Array.from([
          ...permuteRowsForHfRope(bias.q, nHeads, headDim, 1).map((x) => x * qScale),
          ...permuteRowsForHfRope(bias.k, nKvHeads, headDim, 1),
          ...bias.v,
        ]))], scope, undefined, 'qkv_proj/Add')
      : projected;
    const qkvHeads = g.op('Reshape', [qkv, qkvShape], scope);
    const { qk, v } = layer.qkNorm
      ? qkNormedHeads(g, layer, qkvHeads, { nHeads, nKvHeads, headDim, scale }, scope, prefix, names.value)
      : splitHeads(qkvHeads, scope, names.value);
    const [qkRotated] = g.node('RotaryEmbedding', [qk, inputs.positionIds, cosCache, sinCache], {
      scope,
      domain: MS_DOMAIN,
      attributes: { interleaved: 0 },
    });
    const [qRot, kRot] = g.node('Split', [qkRotated, qkSplit], {
      scope,
      attributes: { axis: 1 },
      outputs: names.key === undefined ? 2 : [`${scope}/Split_1_output_0`, names.key],
    });
    return { q: qRot, k: kRot, v };
  };

  /** [B, kv, group*S, d] attention context → the layer's output, through o_proj. */
  const outputProjection = (layer: DecoderLayer, context: string, scope: string, prefix: string) => {
    const contextHeads = g.op('Reshape', [context, headsShape], scope); // [B, heads, S, d]
    const contextSeqFirst = g.op('Transpose', [contextHeads], scope, { perm: [0, 2, 1, 3] });
    const contextMerged = g.op('Reshape', [contextSeqFirst, mergedShape], scope);
    const woT = g.floats(`${prefix}.self_attn.o_proj.weight`, [qDim, dim], transpose(layer.wo, dim, qDim));
    return g.op('MatMul', [contextMerged, woT], scope, undefined, 'o_proj/MatMul');
  };

  return { attentionBias, groupedQueryShape, rotatedQkv, outputProjection };
}

function groupedAttention(g: GraphBuilder, ckpt: DecoderCheckpoint, inputs: DecoderInputs): AttentionBlock {
  const { attentionBias, groupedQueryShape, rotatedQkv, outputProjection } = fusedAttentionParts(g, ckpt, inputs);
  return ({ layer, index, xNorm, scope, prefix }) => {
    const { q, k, v } = rotatedQkv(layer, xNorm, scope, prefix);
    const past = inputs.past[index];
    const [presentKey] = g.node('Concat', [past.key, k], {
      scope,
      attributes: { axis: 2 },
      outputs: [`present.${index}.key`],
    });
    const [presentValue] = g.node('Concat', [past.value, v], {
      scope,
      attributes: { axis: 2 },
      outputs: [`present.${index}.value`],
    });

    const qGrouped = g.op('Reshape', [q, groupedQueryShape], scope); // [B, kv, group*S, d]
    const keyT = g.op('Transpose', [presentKey], scope, { perm: [0, 1, 3, 2] }); // folded into the MatMul
    const scores = g.op('MatMul', [qGrouped, keyT], scope);
    const probs = g.op('Softmax', [g.op('Add', [scores, attentionBias], scope)], scope, { axis: -1 });
    const context = g.op('MatMul', [probs, presentValue], scope); // [B, kv, group*S, d]
    return outputProjection(layer, context, scope, prefix);
  };
}
