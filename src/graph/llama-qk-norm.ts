/**
 * Qwen3's per-head RMSNorm of q and k (q_norm / k_norm, weight [head_dim]), applied to the
 * projected heads before RoPE, for the fused and in-place graphs (llama-graph-fused.ts).
 *
 * q and k heads are normalised together by one SimplifiedLayerNormalization over the last
 * axis with a unit weight, then multiplied by a [q heads + kv heads, head_dim] weight that
 * holds q_norm on each q head and k_norm on each k head: the arithmetic of llama.cpp's
 * build_norm (rms_norm, then mul by the weight) and of transformers' Qwen3RMSNorm.
 * The attention scale 1/sqrt(head_dim), which the other graphs fold into q's projection
 * (where a norm after it would undo it), is folded into the q_norm rows instead.
 */
import type { GraphBuilder } from './graph-builder.js';
import type { DecoderLayer } from './decoder-checkpoint.js';
import { permuteRowsForHfRope } from './rope.js';

export interface QkNormDims {
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  /** 1/sqrt(head_dim), folded into q's rows. */
  scale: number;
}

/** The [nHeads + nKvHeads, headDim] weight: q_norm * scale per q head, k_norm per k head, in HF rotate-half order. */
function headNormWeight(qkNorm: NonNullable<DecoderLayer['qkNorm']>, { nHeads, nKvHeads, headDim, scale }: QkNormDims): Float32Array {
  const q = permuteRowsForHfRope(qkNorm.q, 1, headDim, 1).map((x) => x * scale);
  const k = permuteRowsForHfRope(qkNorm.k, 1, headDim, 1);
  const out = new Float32Array((nHeads + nKvHeads) * headDim);
  for (let h = 0; h < nHeads + nKvHeads; h++) out.set(h < nHeads ? q : k, h * headDim);
  return out;
}

/**
 * q|k heads normalised and v heads, both [B, heads, S, d], from the projection's heads
 * [B, S, nHeads + 2 * nKvHeads, d]; `valueName` names v's output (the in-place graph's new values).
 */
export function qkNormedHeads(
  g: GraphBuilder,
  layer: DecoderLayer,
  qkvHeads: string,
  dims: QkNormDims,
  scope: string,
  prefix: string,
  valueName?: string,
): { qk: string; v: string } {
  const { nHeads, nKvHeads, headDim } = dims;
  const [qkRaw, vRaw] = g.node('Split', [qkvHeads, g.int64Constant([nHeads + nKvHeads, nKvHeads])], {
    scope,
    attributes: { axis: 2 },
    outputs: 2,
  });
  const unit = g.floats(`${prefix}.self_attn.qk_norm.unit`, [headDim], new Float32Array(headDim).fill(1));
  const normed = g.op('SimplifiedLayerNormalization', [qkRaw, unit], `${scope}/qk_norm`, { axis: -1, epsilon: { float: layer.qkNorm!.epsilon } });
  const weight = g.floats(`${prefix}.self_attn.qk_norm.weight`, [nHeads + nKvHeads, headDim], headNormWeight(layer.qkNorm!, dims));
  const scaled = g.op('Mul', [normed, weight], `${scope}/qk_norm`);
  const qk = g.op('Transpose', [scaled], scope, { perm: [0, 2, 1, 3] });
  const [v] = g.node('Transpose', [vRaw], {
    scope,
    attributes: { perm: [0, 2, 1, 3] },
    outputs: valueName === undefined ? 1 : [valueName],
  });
  return { qk, v };
}
