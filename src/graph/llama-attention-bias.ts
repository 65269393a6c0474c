/** The attention bias of the graphs that compute attention from plain MatMul/Softmax nodes. */
import type { GraphBuilder } from './graph-builder.js';
import { OnnxDataType } from './onnx-writer.js';
import { MASK_BIAS } from './llama-graph-io.js';

/**
 * Bias [B, 1, group*S, T] added to every layer's scores: 0 where query q (absolute position
 * past + q) may see key k (k <= past + q and attention_mask[b, k] == 1), else MASK_BIAS.
 * Rows are tiled `group` times to match the grouped-query layout, where the `group` query
 * heads sharing a kv head are stacked on the sequence axis ([B, kv_heads, group * S, d]).
 */
export function buildGroupedAttentionBias(g: GraphBuilder, inputIds: string, attentionMask: string, group: number): string {
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
