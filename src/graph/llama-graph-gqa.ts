/**
 * The `gqa` decoder graph: the fused skeleton (llama-graph-blocks.ts) with attention in one
 * com.microsoft GroupQueryAttention node per layer, 13 nodes per layer in all. Its decode step
 * is the fastest for one stream at a time, but its CPU kernel loops over (batch, query head)
 * pairs and copies the cache once per query head, so from a handful of concurrent streams
 * the `fused` graph is faster, and its prefill is slower (about 10 times on WASM).
 *
 * GroupQueryAttention appends to the cache (present = concat(past, new)), applies the causal
 * mask and shares each kv head between its query heads. Its own rotary needs a head size that
 * is a multiple of 16 (ours is 8), hence a separate RotaryEmbedding. It locates each row's
 * keys with seqlens_k (total length - 1): here every row spans all `past + S` slots,
 * padding included, and padding or holes are masked by an attention_bias built from
 * attention_mask, so a left-padded batch gives each row the logits it would get alone.
 *
 * Limitation: the op takes several new tokens on top of a cache only for a batch of one row
 * (it fails with "batch_size must be 1" otherwise). The engine never asks for that (it
 * prefills one sequence at a time and decodes one token per row), but other callers may.
 */
import type { DecoderCheckpoint } from './decoder-checkpoint.js';
import type { GraphBuilder } from './graph-builder.js';
import { OnnxDataType, type OnnxGraph } from './onnx-writer.js';
import { concatColumns, transpose } from './llama-weights.js';
import { buildSkipNormDecoder, MS_DOMAIN, type AttentionBlock } from './llama-graph-blocks.js';
import { MASK_BIAS, newKvName, type DecoderInputs } from './llama-graph-io.js';
import { permuteRowsForHfRope } from './rope.js';

export function buildGqaLlamaGraph(ckpt: DecoderCheckpoint, rmsNormEps: number): OnnxGraph {
  return buildSkipNormDecoder(ckpt, rmsNormEps, (g, inputs) => gqaAttention(g, ckpt, inputs, 'padded-bias'));
}

/**
 * The `gqa` attention over the `inplace` contract (llama-graph-inplace.ts): past_key_values
 * is the engine's cache, read and never handed back; the fed tokens' rotated keys and values
 * leave as new_key_values. GroupQueryAttention's present outputs stay inside the graph (the
 * op still writes concat(past, new) into them, but onnxruntime-node never copies them out).
 * Not a converter flavour: measured against `inplace` for issue #38 (bench/decode-step-ab.ts),
 * it cost 1.04–1.06× the CPU of a one-row q4 decode step on the 135M-shaped model (17 nodes
 * a layer instead of 27, but the op copies the cache into present and loops per query
 * head), and it inherits `gqa`'s refusal of several new tokens on a cache for more than one
 * row, which the engine's shared prefills and prefix reuse need.
 */
export function buildGqaInplaceLlamaGraph(ckpt: DecoderCheckpoint, rmsNormEps: number): OnnxGraph {
  return buildSkipNormDecoder(ckpt, rmsNormEps, (g, inputs) => gqaAttention(g, ckpt, inputs, 'padded-bias', 'new'), 'new');
}

/**
 * GroupQueryAttention wired as onnxruntime-genai's model builder wires it: seqlens_k =
 * ReduceSum(attention_mask) - 1 and no attention bias, so each row's keys are its first
 * seqlens_k + 1 slots and new keys are written right after them. Such a graph wants
 * right-padded rows (real slots first); fed left-padded rows, a shorter row reads padding.
 * Not a converter flavour: a fixture for the engine's tests of other exporters' graphs.
 */
export function buildGenaiGqaLlamaGraph(ckpt: DecoderCheckpoint, rmsNormEps: number): OnnxGraph {
  return buildSkipNormDecoder(ckpt, rmsNormEps, (g, inputs) => gqaAttention(g, ckpt, inputs, 'genai'));
}

function gqaAttention(
  g: GraphBuilder,
  ckpt: DecoderCheckpoint,
  inputs: DecoderInputs,
  wiring: 'padded-bias' | 'genai',
  kvOutputs: 'present' | 'new' = 'present',
): AttentionBlock {
  const { dim, nHeads, nKvHeads, seqLen } = ckpt.header;
  const { headDim, kvDim } = ckpt;
  // RotaryEmbedding's caches are [max_position, head_dim / 2]: exactly llama2.c's freq_cis tables.
  const cosCache = g.floats('model.rotary_emb.cos_cache', [seqLen, headDim / 2], ckpt.freqCisReal);
  const sinCache = g.floats('model.rotary_emb.sin_cache', [seqLen, headDim / 2], ckpt.freqCisImag);
  const { attentionBias, seqlensK, totalLength } =
    wiring === 'genai' ? buildGenaiMaskInputs(g, inputs.attentionMask) : buildGqaMaskInputs(g, inputs.inputIds, inputs.attentionMask);
  const qkSplit = g.int64Constant([nHeads * headDim, kvDim]);
  const kvHeadsShape = g.int64Constant([0, 0, nKvHeads, headDim]);
  const newKvHeads = (index: number, kind: 'key' | 'value') => `${newKvName(index, kind)}/sequence_first`;

  return ({ layer, index, xNorm, scope, prefix }) => {
    const q = permuteRowsForHfRope(layer.wq, nHeads, headDim, dim);
    const k = permuteRowsForHfRope(layer.wk, nKvHeads, headDim, dim);
    const qkWeight = concatColumns([transpose(q, dim, dim), transpose(k, kvDim, dim)], dim);
    const qkW = g.floats(`${prefix}.self_attn.qk_proj.weight`, [dim, dim + kvDim], qkWeight);
    const vW = g.floats(`${prefix}.self_attn.v_proj.weight`, [dim, kvDim], transpose(layer.wv, kvDim, dim));
    const qk = g.op('MatMul', [xNorm, qkW], scope, undefined, 'qk_proj/MatMul');
    const [qkRotated] = g.node('RotaryEmbedding', [qk, inputs.positionIds, cosCache, sinCache], {
      scope,
      domain: MS_DOMAIN,
      attributes: { interleaved: 0, num_heads: nHeads + nKvHeads, rotary_embedding_dim: headDim },
    });
    const inPlace = kvOutputs === 'new';
    const [qRot, kRot] = g.node('Split', [qkRotated, qkSplit], {
      scope,
      attributes: { axis: -1 },
      outputs: inPlace ? [`${scope}/Split_output_0`, newKvHeads(index, 'key')] : 2,
    });
    const v = inPlace
      ? g.node('MatMul', [xNorm, vW], { scope, outputs: [newKvHeads(index, 'value')] })[0]
      : g.op('MatMul', [xNorm, vW], scope, undefined, 'v_proj/MatMul');
    const past = inputs.past[index];
    const [context] = g.node(
      'GroupQueryAttention',
      [qRot, kRot, v, past.key, past.value, seqlensK, totalLength, '', '', '', attentionBias],
      {
        scope,
        domain: MS_DOMAIN,
        attributes: { num_heads: nHeads, kv_num_heads: nKvHeads, scale: { float: 1 / Math.sqrt(headDim) } },
        outputs: [
          `${scope}/GroupQueryAttention_output_0`,
          inPlace ? `${scope}/present_key` : `present.${index}.key`,
          inPlace ? `${scope}/present_value` : `present.${index}.value`,
        ],
      },
    );
    if (inPlace) {
      // new_key_values wants [B, kv_heads, S, d]; the op's inputs are [B, S, kv_heads * d].
      for (const kind of ['key', 'value'] as const) {
        const heads = g.op('Reshape', [newKvHeads(index, kind), kvHeadsShape], scope);
        g.node('Transpose', [heads], { scope, attributes: { perm: [0, 2, 1, 3] }, outputs: [newKvName(index, kind)] });
      }
    }
    const woT = g.floats(`${prefix}.self_attn.o_proj.weight`, [dim, dim], transpose(layer.wo, dim, dim));
    return g.op('MatMul', [context, woT], scope, undefined, 'o_proj/MatMul');
  };
}

/**
 * GroupQueryAttention's mask inputs, shared by all layers:
 * - attention_bias [B, 1, S, T]: 0 where attention_mask is 1, MASK_BIAS where it is 0, the
 *   same for every query row (the op adds the causal mask itself);
 * - seqlens_k [B] = T - 1 and total_sequence_length [1] = T, int32: every row spans all
 *   T slots, so present = concat(past, new) row by row.
 */
function buildGqaMaskInputs(
  g: GraphBuilder,
  inputIds: string,
  attentionMask: string,
): { attentionBias: string; seqlensK: string; totalLength: string } {
  const scope = '/model/attention_bias';
  const keep = g.op('Cast', [attentionMask], scope, { to: OnnxDataType.BOOL }); // [B, T]
  const biasRows = g.op('Where', [keep, g.floatScalar('zero', 0), g.floatScalar('mask_bias', MASK_BIAS)], scope);
  const biasRows4d = g.op('Unsqueeze', [biasRows, g.int64Constant([1, 2])], scope); // [B, 1, 1, T]
  const queryLen = g.op('Shape', [inputIds], scope, { start: 1, end: 2 }); // [S]
  const biasShape = g.op('Concat', [g.int64Constant([1, 1]), queryLen, g.int64Constant([1])], scope, { axis: 0 });
  const attentionBias = g.op('Expand', [biasRows4d, biasShape], scope); // [B, 1, S, T]

  const lengthScope = '/model/seqlens';
  const total64 = g.op('Shape', [attentionMask], lengthScope, { start: 1, end: 2 }); // [T]
  const totalLength = g.op('Cast', [total64], lengthScope, { to: OnnxDataType.INT32 });
  const lastIndex = g.op('Sub', [totalLength, g.int32Constant([1])], lengthScope);
  const batch = g.op('Shape', [attentionMask], lengthScope, { start: 0, end: 1 }); // [B]
  const seqlensK = g.op('Expand', [lastIndex, batch], lengthScope); // [B], all T - 1
  return { attentionBias, seqlensK, totalLength };
}

/** seqlens_k = ReduceSum(attention_mask, 1) - 1, total_sequence_length = T, as onnxruntime-genai builds them. */
function buildGenaiMaskInputs(g: GraphBuilder, attentionMask: string): { attentionBias: string; seqlensK: string; totalLength: string } {
  const scope = '/model/attn_mask_reformat';
  const sum = g.op('ReduceSum', [attentionMask, g.int64Constant([1])], scope, { keepdims: 0 });
  const lastIndex = g.op('Sub', [sum, g.int64Constant([1], true)], scope);
  const seqlensK = g.op('Cast', [lastIndex], scope, { to: OnnxDataType.INT32 });
  const total64 = g.op('Shape', [attentionMask], scope, { start: 1, end: 2 });
  const totalLength = g.op('Cast', [total64], scope, { to: OnnxDataType.INT32 });
  return { attentionBias: '', seqlensK, totalLength };
}
