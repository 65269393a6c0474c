/**
 * The decoder graph's interface, shared by every graph flavour: the layout of Optimum /
 * transformers.js "with past" Llama exports. Inputs input_ids, attention_mask,
 * position_ids, past_key_values.{i}.key/value; outputs logits and present.{i}.key/value
 * (present = concat(past, new) on the sequence axis).
 *
 * Semantics every flavour keeps: key k is visible to query q when k <= past + q and
 * attention_mask[b, k] == 1 (so rows may be left-padded or hold masked holes), and
 * positions come only from position_ids.
 */
import type { DecoderCheckpoint } from './decoder-checkpoint.js';
import type { GraphBuilder } from './graph-builder.js';
import { OnnxDataType } from './onnx-writer.js';
import { transpose } from './llama-weights.js';

/** Additive bias for masked scores: float32 lowest, not -inf, so fully masked rows stay finite. */
export const MASK_BIAS = -3.4028234663852886e38;

export const DIM_NAMES = {
  batch: 'batch_size',
  sequence: 'sequence_length',
  past: 'past_sequence_length',
  total: 'past_sequence_length + sequence_length',
} as const;

/** What the decoder's interface depends on: its sizes (any decoder the builders make, not only llama2.c's). */
export type DecoderShape = Pick<DecoderCheckpoint, 'header' | 'headDim'>;

export interface DecoderInputs {
  inputIds: string;
  attentionMask: string;
  positionIds: string;
  past: Array<{ key: string; value: string }>;
}

export function declareDecoderInputs(g: GraphBuilder, ckpt: DecoderShape): DecoderInputs {
  const { batch, sequence, past, total } = DIM_NAMES;
  const { nLayers, nKvHeads } = ckpt.header;
  return {
    inputIds: g.input('input_ids', OnnxDataType.INT64, [batch, sequence]),
    attentionMask: g.input('attention_mask', OnnxDataType.INT64, [batch, total]),
    positionIds: g.input('position_ids', OnnxDataType.INT64, [batch, sequence]),
    past: Array.from({ length: nLayers }, (_, i) => ({
      key: g.input(`past_key_values.${i}.key`, OnnxDataType.FLOAT, [batch, nKvHeads, past, ckpt.headDim]),
      value: g.input(`past_key_values.${i}.value`, OnnxDataType.FLOAT, [batch, nKvHeads, past, ckpt.headDim]),
    })),
  };
}

/** Declares logits and present.*; the nodes producing them must use exactly these names. */
export function declareDecoderOutputs(g: GraphBuilder, ckpt: DecoderShape): void {
  const { batch, sequence, total } = DIM_NAMES;
  const { nLayers, nKvHeads, vocabSize } = ckpt.header;
  g.output('logits', OnnxDataType.FLOAT, [batch, sequence, vocabSize]);
  for (let i = 0; i < nLayers; i++) {
    g.output(`present.${i}.key`, OnnxDataType.FLOAT, [batch, nKvHeads, total, ckpt.headDim]);
    g.output(`present.${i}.value`, OnnxDataType.FLOAT, [batch, nKvHeads, total, ckpt.headDim]);
  }
}

/**
 * The `inplace` flavour's outputs (llama-graph-inplace.ts): logits and only the keys and
 * values of the fed tokens. The caller writes them into its own cache, which the graph reads
 * as past_key_values and never copies: the cache is not an output, so onnxruntime never
 * hands it back. The layers' new slots leave as ONE output, `new_key_values`
 * [2 * layers * B, kv_heads, S, head_dim]: one Concat (axis 0) of each layer's key then
 * value ([B, kv_heads, S, head_dim] each, the values named new_key_values.{i}.key/value),
 * so block 2i is layer i's keys and 2i + 1 its values. One output instead of two a layer:
 * every graph output costs onnxruntime an allocation outside its planned arena and
 * onnxruntime-node a tensor of its own per run (-3 to -10% CPU a one-row decode step on
 * the 135M-shaped q4 model, -8 to -10% on the embedded stories260K).
 */
export const PACKED_NEW_KV = 'new_key_values';

export function declareNewKvOutputs(g: GraphBuilder, ckpt: DecoderShape): void {
  const { batch, sequence } = DIM_NAMES;
  const { nLayers, nKvHeads, vocabSize } = ckpt.header;
  g.output('logits', OnnxDataType.FLOAT, [batch, sequence, vocabSize]);
  const perLayer = Array.from({ length: nLayers }, (_, i) => [newKvName(i, 'key'), newKvName(i, 'value')]).flat();
  g.node('Concat', perLayer, { scope: '/new_key_values', attributes: { axis: 0 }, outputs: [PACKED_NEW_KV] });
  g.output(PACKED_NEW_KV, OnnxDataType.FLOAT, [`${2 * nLayers} * ${batch}`, nKvHeads, sequence, ckpt.headDim]);
}

/** The value holding layer i's new keys or values (a block of the packed output). */
export function newKvName(layer: number, kind: 'key' | 'value'): string {
  return `${PACKED_NEW_KV}.${layer}.${kind}`;
}

/** The output projection: tied to the embedding (a Transpose onnxruntime folds at load) or its own weight. */
export function lmHeadWeight(g: GraphBuilder, ckpt: DecoderCheckpoint, embedding: string): string {
  const { dim, vocabSize } = ckpt.header;
  if (ckpt.header.sharedClassifier) return g.op('Transpose', [embedding], '/lm_head', { perm: [1, 0] });
  return g.floats('lm_head.weight', [dim, vocabSize], transpose(ckpt.classifier, vocabSize, dim));
}
