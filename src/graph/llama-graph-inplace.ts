/**
 * The `inplace` decoder graph: the `fused` graph (llama-graph-fused.ts) for a cache that the
 * caller keeps and updates in place. past_key_values.{i}.key/value are read, never copied,
 * and the graph outputs only the fed tokens' keys and values (new_key_values, every layer's
 * in one output: llama-graph-io.ts), which the caller writes into its cache's free slots.
 * So a decode step costs no copy of the cache: no Concat(past, new), and no present.*
 * output, which onnxruntime-node copies into a fresh JavaScript buffer on every run (even
 * into a preallocated `fetches` tensor: measured on 1.30), so a past/present shared buffer
 * (GroupQueryAttention's past_present_share_buffer) would still copy the whole cache per
 * step from JavaScript.
 *
 * The cache may hold more slots than any row uses (room to grow into): attention_mask
 * [B, T + S] marks each row's real slots among the T cached ones, then the S fed ones.
 * Scores against the cache and against the fed tokens are two MatMuls, concatenated before
 * one softmax, so the math is the fused graph's over the virtual sequence [cache | new]:
 * key k is visible to query q when k <= T + q and attention_mask[b, k] == 1. Keys carry
 * their rotary position already, so where a row's real slots sit in the cache is free.
 */
import type { DecoderCheckpoint } from './decoder-checkpoint.js';
import type { GraphBuilder } from './graph-builder.js';
import type { OnnxGraph } from './onnx-writer.js';
import { buildSkipNormDecoder, type AttentionBlock } from './llama-graph-blocks.js';
import { fusedAttentionParts } from './llama-graph-fused.js';
import { newKvName, type DecoderInputs } from './llama-graph-io.js';

export function buildInplaceLlamaGraph(ckpt: DecoderCheckpoint, rmsNormEps: number): OnnxGraph {
  return buildSkipNormDecoder(ckpt, rmsNormEps, (g, inputs) => inplaceAttention(g, ckpt, inputs), 'new');
}

function inplaceAttention(g: GraphBuilder, ckpt: DecoderCheckpoint, inputs: DecoderInputs): AttentionBlock {
  const { attentionBias, groupedQueryShape, rotatedQkv, outputProjection } = fusedAttentionParts(g, ckpt, inputs);
  // [T, S]: how the probabilities split between the cached slots and the fed tokens.
  const splitScope = '/model/attention_split';
  const cached = g.op('Shape', [inputs.past[0].key], splitScope, { start: 2, end: 3 });
  const fed = g.op('Shape', [inputs.inputIds], splitScope, { start: 1, end: 2 });
  const probsSplit = g.op('Concat', [cached, fed], splitScope, { axis: 0 });

  return ({ layer, index, xNorm, scope, prefix }) => {
    const { q, k: newKey, v: newValue } = rotatedQkv(layer, xNorm, scope, prefix, {
      value: newKvName(index, 'value'),
      key: newKvName(index, 'key'),
    });
    const past = inputs.past[index];
    const qGrouped = g.op('Reshape', [q, groupedQueryShape], scope); // [B, kv, group*S, d]
    const cachedScores = g.op('MatMul', [qGrouped, g.op('Transpose', [past.key], scope, { perm: [0, 1, 3, 2] })], scope);
    const newScores = g.op('MatMul', [qGrouped, g.op('Transpose', [newKey], scope, { perm: [0, 1, 3, 2] })], scope);
    const scores = g.op('Concat', [cachedScores, newScores], scope, { axis: -1 }); // [B, kv, group*S, T + S]
    const probs = g.op('Softmax', [g.op('Add', [scores, attentionBias], scope)], scope, { axis: -1 });
    const [cachedProbs, newProbs] = g.node('Split', [probs, probsSplit], { scope, attributes: { axis: -1 }, outputs: 2 });
    const context = g.op(
      'Add',
      [g.op('MatMul', [cachedProbs, past.value], scope), g.op('MatMul', [newProbs, newValue], scope)],
      scope,
    ); // [B, kv, group*S, d]
    return outputProjection(layer, context, scope, prefix);
  };
}
