/**
 * `qwen3` (Qwen3 dense; llama.cpp's src/models/qwen3.cpp): qwen2's decoder without the q/k/v
 * biases, plus an RMSNorm over each head of q and of k (attn_q_norm / attn_k_norm, weight
 * [head_dim], the model's rms epsilon) after the projection and before RoPE. head_dim is
 * attention.key_length, which need not be embedding_length / head_count (Qwen3-0.6B: 128
 * for 1024 / 16), so attn_q is [hidden, heads * head_dim] and attn_output its transpose.
 * RoPE is NEOX (rotate-half), q/k rows in HF order as for qwen2 (the converter does not
 * permute them): the norm weights, indexed like a head's rows, are reordered with them.
 * `qwen3moe` is a different model (experts), refused by name with every other architecture.
 */
import type { DecoderLayer } from '../../graph/decoder-checkpoint.js';

export const QWEN3 = 'qwen3';

/** The per-layer tensors qwen3 has beside llama's (without biases): the two head norms. */
export function qwen3LayerTensors(layer: number, headDim: number): Array<[string, number[]]> {
  return [
    [`blk.${layer}.attn_q_norm.weight`, [headDim]],
    [`blk.${layer}.attn_k_norm.weight`, [headDim]],
  ];
}

/** The layer's head norms, each put in the order its rows are given (`toRowOrder`: one head of one column). */
export async function readQwen3HeadNorms(
  read: (name: string) => Promise<Float32Array>,
  layerPrefix: string,
  toRowOrder: (weight: Float32Array) => Float32Array,
  epsilon: number,
): Promise<NonNullable<DecoderLayer['qkNorm']>> {
  return {
    q: toRowOrder(await read(`${layerPrefix}attn_q_norm.weight`)),
    k: toRowOrder(await read(`${layerPrefix}attn_k_norm.weight`)),
    epsilon,
  };
}
