/**
 * `gemma2` (Gemma 2: transformers' Gemma2ForCausalLM, llama.cpp's src/models/gemma2.cpp) as
 * the converter's Gemma 2 checkpoint (src/graph/gemma2-graph.ts). What the file holds and
 * how llama.cpp reads it (its converter: conversion/gemma.py Gemma2Model):
 * - RMSNorm weights with transformers' +1 already added: used as stored;
 * - four norms a layer: attn_norm, post_attention_norm, ffn_norm, post_ffw_norm;
 * - no output.weight: the head is token_embd (llama.cpp refuses a file that has one);
 * - q/k rows in rotate-half order (llama.cpp's NEOX rope; the converter does not permute);
 * - attention.key_length = head_dim, which need not be embedding_length / head_count;
 * - attn_logit_softcapping and final_logit_softcapping (llama.cpp: 50 and 30 when absent);
 * - query_pre_attn_scalar is not stored: llama.cpp scales queries by 1/sqrt(head_dim), or
 *   1/sqrt(embedding_length / head_count) for a 46-layer file (gemma-2-27b, whose
 *   query_pre_attn_scalar is 144 = 4608 / 32); both equal transformers' for Google's configs;
 * - attention.sliding_window (4096 when absent) on the layers attention.sliding_window_pattern
 *   marks (llama.cpp: layer i slides when i % n < n - 1, n = 2 when absent: layers 0, 2, ...);
 *   the graph masks keys `window` or more positions back there, as llama.cpp and transformers.
 *
 * Anything else the graph cannot express is refused by name: a different rope base on the
 * sliding layers (rope.freq_base_swa), value length unlike the key length, partial rotary,
 * rope scaling other than linear, extra or missing tensors.
 */
import type { Gemma2Checkpoint, Gemma2Layer } from '../../graph/gemma2-graph.js';
import type { GgufFile } from '../gguf-file.js';
import {
  architectureOf,
  checkpointHeader,
  decoderDimensions,
  expectTensors,
  GgufModelError,
  MAX_GGUF_CONTEXT,
  meta,
  metaNumber,
  ropeTables,
  tensorReaders,
  tensorTypesOf,
  type CheckpointProjection,
  type GgufLlamaShape,
} from '../llama-checkpoint.js';

export const GEMMA2 = 'gemma2';

/** llama.cpp's defaults for keys a gemma2 file may leave out (llama-hparams.h, models/gemma2.cpp). */
const DEFAULT_ATTENTION_SOFTCAP = 50;
const DEFAULT_FINAL_SOFTCAP = 30;
const DEFAULT_SLIDING_WINDOW = 4096;
const DEFAULT_SLIDING_WINDOW_PATTERN = 2;
/** gemma-2-27b: llama.cpp recognises it by its layer count and scales queries by hidden / heads. */
const GEMMA2_27B_LAYERS = 46;

export interface GgufGemma2Shape extends GgufLlamaShape {
  gemma2: {
    /** transformers' query_pre_attn_scalar as llama.cpp derives it: queries are scaled by its inverse square root. */
    queryPreAttnScalar: number;
    queryScale: number;
    /** What the query scale is derived from, for the report. */
    queryScaleFrom: string;
    attentionSoftcap: number;
    finalSoftcap: number;
    slidingWindow: number;
    slidingLayers: boolean[];
  };
}

export function isGemma2Shape(shape: GgufLlamaShape): shape is GgufGemma2Shape {
  return shape.architecture === GEMMA2 && 'gemma2' in shape;
}

export const LAYER_NORMS = ['attn_norm', 'post_attention_norm', 'ffn_norm', 'post_ffw_norm'] as const;

export function positive(file: GgufFile, key: string, fallback: number): number {
  const value = metaNumber(file, key, fallback);
  if (!(value > 0) || !Number.isFinite(value)) throw new GgufModelError(`${key} is ${value}: not a positive number`);
  return value;
}

type DecoderDimensions = ReturnType<typeof decoderDimensions>;

/** The tensors of a Gemma 2 or 3 file (Gemma 3 adds per-head q/k norms); the head is token_embd. */
export function expectGemmaTensors(file: GgufFile, dims: DecoderDimensions, qkNorm: boolean): void {
  const { dim, nLayers, nHeads, nKvHeads, hiddenDim, headDim, vocabSize } = dims;
  const qDim = headDim * nHeads;
  const kvDim = headDim * nKvHeads;
  const expected = new Map<string, number[]>([
    ['token_embd.weight', [dim, vocabSize]],
    ['output_norm.weight', [dim]],
  ]);
  for (let i = 0; i < nLayers; i++) {
    const p = `blk.${i}.`;
    for (const norm of LAYER_NORMS) expected.set(`${p}${norm}.weight`, [dim]);
    if (qkNorm) {
      expected.set(`${p}attn_q_norm.weight`, [headDim]);
      expected.set(`${p}attn_k_norm.weight`, [headDim]);
    }
    expected.set(`${p}attn_q.weight`, [dim, qDim]);
    expected.set(`${p}attn_k.weight`, [dim, kvDim]);
    expected.set(`${p}attn_v.weight`, [dim, kvDim]);
    expected.set(`${p}attn_output.weight`, [qDim, dim]);
    expected.set(`${p}ffn_gate.weight`, [dim, hiddenDim]);
    expected.set(`${p}ffn_up.weight`, [dim, hiddenDim]);
    expected.set(`${p}ffn_down.weight`, [hiddenDim, dim]);
  }
  expectTensors(file, expected, `the ${architectureOf(file)} layout (its head is token_embd.weight)`);
}

/** The llama-shape fields Gemma 2 and 3 files share: rotate-half rows, tied head, no biases. */
export function gemmaLlamaShape(
  file: GgufFile,
  dims: DecoderDimensions,
  rope: Pick<GgufLlamaShape, 'ropeTheta' | 'ropeScaling' | 'ropeAttentionFactor'>,
  qkNorm: boolean,
): GgufLlamaShape {
  const a = architectureOf(file);
  const fileContextLength = metaNumber(file, `${a}.context_length`);
  const name = meta(file, 'general.name');
  return {
    architecture: a,
    name: typeof name === 'string' ? name : null,
    ...dims,
    contextLength: Math.min(fileContextLength, MAX_GGUF_CONTEXT),
    fileContextLength,
    rmsNormEps: metaNumber(file, `${a}.attention.layer_norm_rms_epsilon`),
    ...rope,
    tiedEmbeddings: true,
    qkvBias: false,
    qkNorm,
    fusedQkv: false,
    fusedGateUp: false,
    ropeOrder: 'rotate-half',
    tensorTypes: tensorTypesOf(file),
  };
}

/**
 * Queries scaled as llama.cpp scales them: by 1/sqrt(key_length), or by
 * 1/sqrt(embedding_length / head_count) for the 27B file it recognises by its layer count.
 */
export function gemmaQueryScale(dims: DecoderDimensions, layersOf27b: number, model27b: string): { queryPreAttnScalar: number; queryScale: number; queryScaleFrom: string } {
  const { dim, nHeads, headDim, nLayers } = dims;
  const is27b = nLayers === layersOf27b;
  const scalar = is27b ? dim / nHeads : headDim;
  return {
    queryPreAttnScalar: scalar,
    queryScale: 1 / Math.sqrt(scalar),
    queryScaleFrom: is27b ? `embedding_length / head_count = ${dim / nHeads} (${layersOf27b} layers: ${model27b}, as llama.cpp)` : `key_length ${headDim}`,
  };
}

/** Each layer's weights, dequantized as ggml does (or projected: CheckpointProjection); Gemma 3's with its q/k norms. */
export async function readGemmaLayers(file: GgufFile, nLayers: number, projection: CheckpointProjection, qkNorm: boolean): Promise<Gemma2Layer[]> {
  const { read, matrix } = tensorReaders(file, projection);
  const layers: Gemma2Layer[] = [];
  for (let i = 0; i < nLayers; i++) {
    const p = `blk.${i}.`;
    const [inputNorm, postAttentionNorm, preFeedforwardNorm, postFeedforwardNorm] = await Promise.all(LAYER_NORMS.map((norm) => read(`${p}${norm}.weight`)));
    const qkNorms = qkNorm ? { qNorm: await read(`${p}attn_q_norm.weight`), kNorm: await read(`${p}attn_k_norm.weight`) } : {};
    const [wq, wk, wv, wo, gate, up, down] = await Promise.all(
      ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down'].map((part) => matrix(`${p}${part}.weight`)),
    );
    layers.push({
      inputNorm,
      postAttentionNorm,
      preFeedforwardNorm,
      postFeedforwardNorm,
      ...qkNorms,
      get wq() { return wq(); },
      get wk() { return wk(); },
      get wv() { return wv(); },
      get wo() { return wo(); },
      get gate() { return gate(); },
      get up() { return up(); },
      get down() { return down(); },
    });
  }
  return layers;
}

export function gemma2ShapeOf(file: GgufFile): GgufGemma2Shape {
  const a = architectureOf(file);
  if (a !== GEMMA2) throw new GgufModelError(`not a gemma2 file: architecture "${a}"`);
  const dims = decoderDimensions(file, a);
  const ropeTheta = metaNumber(file, `${a}.rope.freq_base`, 10000);
  const swaTheta = metaNumber(file, `${a}.rope.freq_base_swa`, ropeTheta);
  if (swaTheta !== ropeTheta) throw new GgufModelError(`rope.freq_base_swa ${swaTheta} (a rope base of its own on the sliding-window layers, beside ${ropeTheta}) is not supported`);
  let ropeScaling: GgufLlamaShape['ropeScaling'] = { kind: 'none' };
  const scalingType = meta(file, `${a}.rope.scaling.type`);
  if (scalingType === 'linear') ropeScaling = { kind: 'linear', factor: metaNumber(file, `${a}.rope.scaling.factor`) };
  else if (scalingType !== undefined && scalingType !== 'none') throw new GgufModelError(`rope scaling "${String(scalingType)}" is not supported for gemma2 (none and linear are)`);
  expectGemmaTensors(file, dims, false);

  const slidingWindow = positive(file, `${a}.attention.sliding_window`, DEFAULT_SLIDING_WINDOW);
  const pattern = metaNumber(file, `${a}.attention.sliding_window_pattern`, DEFAULT_SLIDING_WINDOW_PATTERN);
  const slidingLayers = Array.from({ length: dims.nLayers }, (_, i) => pattern === 0 || i % pattern < pattern - 1);
  return {
    ...gemmaLlamaShape(file, dims, { ropeTheta, ropeScaling, ropeAttentionFactor: metaNumber(file, `${a}.rope.scaling.attn_factor`, 1) }, false),
    gemma2: {
      ...gemmaQueryScale(dims, GEMMA2_27B_LAYERS, 'gemma-2-27b'),
      attentionSoftcap: positive(file, `${a}.attn_logit_softcapping`, DEFAULT_ATTENTION_SOFTCAP),
      finalSoftcap: positive(file, `${a}.final_logit_softcapping`, DEFAULT_FINAL_SOFTCAP),
      slidingWindow,
      slidingLayers,
    },
  };
}

/** config.json fields transformers' Gemma2Config has beside the llama ones (for a folder written from the file). */
export function gemma2ConfigFields(shape: GgufGemma2Shape): Record<string, unknown> {
  return {
    architectures: ['Gemma2ForCausalLM'],
    hidden_act: 'gelu_pytorch_tanh',
    hidden_activation: 'gelu_pytorch_tanh',
    query_pre_attn_scalar: shape.gemma2.queryPreAttnScalar,
    attn_logit_softcapping: shape.gemma2.attentionSoftcap,
    final_logit_softcapping: shape.gemma2.finalSoftcap,
    sliding_window: shape.gemma2.slidingWindow,
  };
}

export function gemma2ReportLines(shape: GgufGemma2Shape): string[] {
  const { gemma2 } = shape;
  const sliding = gemma2.slidingLayers.flatMap((slides, i) => (slides ? [i] : []));
  const layers = sliding.length === shape.nLayers ? 'every layer' : sliding.length === 0 ? 'no layer' : `layers ${sliding.slice(0, 4).join(', ')}${sliding.length > 4 ? ', …' : ''}`;
  return [
    `GGUF gemma2: embeddings × sqrt(${shape.dim}), 4 RMSNorms a layer, GELU (tanh) MLP, query scale 1/sqrt(${gemma2.queryPreAttnScalar}) from ${gemma2.queryScaleFrom}, attention logits soft-capped at ${gemma2.attentionSoftcap}, final logits at ${gemma2.finalSoftcap}, ${shape.nHeads} heads of ${shape.headDim}`,
    `GGUF gemma2: sliding window of ${gemma2.slidingWindow} positions on ${layers} (of ${shape.nLayers}), full attention on the others`,
  ];
}

/**
 * The model's weights in the converter's Gemma 2 checkpoint, dequantized as ggml does (or,
 * for the quantized-weight pass, each matrix element's block scale or min: llama-checkpoint.ts
 * CheckpointProjection). Matrices are made float32 when the graph builder reads them, once each.
 */
export async function readGemma2Checkpoint(file: GgufFile, shape: GgufGemma2Shape, projection: CheckpointProjection = 'values'): Promise<Gemma2Checkpoint> {
  const { read, matrix } = tensorReaders(file, projection);
  const tokenEmbedding = await matrix('token_embd.weight');
  const layers = await readGemmaLayers(file, shape.nLayers, projection, false);
  const { real, imag } = ropeTables(shape, null);
  return {
    family: 'gemma2',
    header: checkpointHeader(shape),
    headDim: shape.headDim,
    kvDim: shape.headDim * shape.nKvHeads,
    get tokenEmbedding() { return tokenEmbedding(); },
    layers,
    finalNorm: await read('output_norm.weight'),
    ropeCos: real,
    ropeSin: imag,
    embeddingScale: Math.sqrt(shape.dim),
    queryScale: shape.gemma2.queryScale,
    attentionSoftcap: shape.gemma2.attentionSoftcap,
    finalSoftcap: shape.gemma2.finalSoftcap,
    slidingWindow: shape.gemma2.slidingWindow,
    slidingLayers: shape.gemma2.slidingLayers,
  };
}
