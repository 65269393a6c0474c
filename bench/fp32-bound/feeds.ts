/**
 * One step's inputs for the bench's 135M-shaped graphs (and the MatMul chain's `x`): `rows`
 * rows of `tokens` new tokens each (1: a decode step; a prompt's length with `past` 0: a prefill).
 */
import * as ort from 'onnxruntime-node';
import { SMOLLM2_135M_SHAPE } from '../size-models.js';

const { dim, nHeads, nKvHeads, vocabSize } = SMOLLM2_135M_SHAPE;
const headDim = dim / nHeads;

export function stepFeeds(inputNames: readonly string[], rows: number, past: number, tokens = 1): Record<string, ort.Tensor> {
  if (inputNames.includes('x')) return { x: new ort.Tensor('float32', Float32Array.from({ length: rows * dim }, (_, i) => Math.sin(i)), [rows, dim]) };
  const ids = BigInt64Array.from({ length: rows * tokens }, (_, i) => BigInt(300 + ((i * 7919) % (vocabSize - 400))));
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', ids, [rows, tokens]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(rows * (past + tokens)).fill(1n), [rows, past + tokens]),
    position_ids: new ort.Tensor('int64', BigInt64Array.from({ length: rows * tokens }, (_, i) => BigInt(past + (i % tokens))), [rows, tokens]),
  };
  if (inputNames.includes('num_logits_to_keep')) feeds.num_logits_to_keep = new ort.Tensor('int64', BigInt64Array.of(1n), []);
  const kv = Float32Array.from({ length: rows * nKvHeads * past * headDim }, (_, i) => Math.sin(i) * 0.5);
  for (const name of inputNames) if (name.startsWith('past_key_values.')) feeds[name] = new ort.Tensor('float32', kv, [rows, nKvHeads, past, headDim]);
  return feeds;
}
