/**
 * `gemma3` (Gemma 3 text models: transformers' Gemma3ForCausalLM and the language model of
 * Gemma3ForConditionalGeneration, llama.cpp's src/models/gemma3.cpp) as the converter's Gemma
 * checkpoint (src/graph/gemma2-graph.ts, which builds both). What the file holds and how
 * llama.cpp reads it (its converter: conversion/gemma.py Gemma3Model):
 * - everything gemma2.ts lists for Gemma 2 (norms with +1 added, four a layer, head from
 *   token_embd, rotate-half rows, head size apart from hidden / heads) but the soft-caps;
 * - attn_q_norm / attn_k_norm [head size] each layer, applied to every head before RoPE;
 * - no attention soft-cap; final_logit_softcapping only where the file has it (none: no cap);
 * - attention.sliding_window: when present (and > 0), layer i slides when i % n < n - 1
 *   with n = attention.sliding_window_pattern, 6 when absent (Google's five local layers to
 *   one global); when absent, every layer is global;
 * - rope.freq_base is the global layers' base (1e6 in Google's files), with the file's rope
 *   scaling (linear ×8 in gemma-3-4b/12b/27b); the sliding layers use rope.freq_base_swa,
 *   10000 when absent (the converter never writes it), and no scaling — as llama.cpp's
 *   get_rope_freq_base / get_rope_freq_scale;
 * - queries scaled by 1/sqrt(key_length), or 1/sqrt(embedding_length / head_count) for a
 *   62-layer file (gemma-3-27b, whose query_pre_attn_scalar is 168 = 5376 / 32).
 *
 * Anything else the graph cannot express is refused by name (see gemma2.ts).
 */
import type { Gemma2Checkpoint } from '../../graph/gemma2-graph.js';
import type { GgufFile } from '../gguf-file.js';
import {
  architectureOf,
  checkpointHeader,
  decoderDimensions,
  GgufModelError,
  meta,
  metaNumber,
  ropeTables,
  tensorReaders,
  type CheckpointProjection,
  type GgufLlamaShape,
} from '../llama-checkpoint.js';
import { expectGemmaTensors, gemmaLlamaShape, gemmaQueryScale, positive, readGemmaLayers } from './gemma2.js';

export const GEMMA3 = 'gemma3';

/** llama.cpp's defaults for keys a gemma3 file may leave out (llama-hparams.h, models/gemma3.cpp). */
const DEFAULT_SLIDING_WINDOW_PATTERN = 6;
const DEFAULT_SLIDING_ROPE_BASE = 10000;
/** gemma-3-27b: llama.cpp recognises it by its layer count and scales queries by hidden / heads. */
const GEMMA3_27B_LAYERS = 62;

export interface GgufGemma3Shape extends GgufLlamaShape {
  gemma3: {
    queryPreAttnScalar: number;
    queryScale: number;
    queryScaleFrom: string;
    /** null: none in the file (Google's Gemma 3). */
    finalSoftcap: number | null;
    /** null: no sliding layers (the file has no attention.sliding_window). */
    slidingWindow: number | null;
    slidingLayers: boolean[];
    slidingRopeTheta: number;
  };
}

export function isGemma3Shape(shape: GgufLlamaShape): shape is GgufGemma3Shape {
  return shape.architecture === GEMMA3 && 'gemma3' in shape;
}

export function gemma3ShapeOf(file: GgufFile): GgufGemma3Shape {
  const a = architectureOf(file);
  if (a !== GEMMA3) throw new GgufModelError(`not a gemma3 file: architecture "${a}"`);
  const dims = decoderDimensions(file, a);
  const ropeTheta = metaNumber(file, `${a}.rope.freq_base`, 10000);
  let ropeScaling: GgufLlamaShape['ropeScaling'] = { kind: 'none' };
  const scalingType = meta(file, `${a}.rope.scaling.type`);
  if (scalingType === 'linear') ropeScaling = { kind: 'linear', factor: positive(file, `${a}.rope.scaling.factor`, 1) };
  else if (scalingType !== undefined && scalingType !== 'none') throw new GgufModelError(`rope scaling "${String(scalingType)}" is not supported for gemma3 (none and linear are)`);
  const attnFactor = metaNumber(file, `${a}.rope.scaling.attn_factor`, 1);
  if (attnFactor !== 1) throw new GgufModelError(`rope.scaling.attn_factor ${attnFactor} is not supported for gemma3`);
  expectGemmaTensors(file, dims, true);

  const windowKey = `${a}.attention.sliding_window`;
  const window = meta(file, windowKey) === undefined ? 0 : metaNumber(file, windowKey);
  if (!(window >= 0) || !Number.isInteger(window)) throw new GgufModelError(`${windowKey} is ${window}: not a count of positions`);
  const patternKey = `${a}.attention.sliding_window_pattern`;
  if (Array.isArray(meta(file, patternKey))) throw new GgufModelError(`${patternKey} as a per-layer array is not supported (a period is)`);
  const pattern = metaNumber(file, patternKey, DEFAULT_SLIDING_WINDOW_PATTERN);
  const slidingLayers = Array.from({ length: dims.nLayers }, (_, i) => window > 0 && (pattern === 0 || i % pattern < pattern - 1));
  const finalSoftcapKey = `${a}.final_logit_softcapping`;
  return {
    ...gemmaLlamaShape(file, dims, { ropeTheta, ropeScaling, ropeAttentionFactor: 1 }, true),
    gemma3: {
      ...gemmaQueryScale(dims, GEMMA3_27B_LAYERS, 'gemma-3-27b'),
      // llama.cpp: a cap of 0 is no cap.
      finalSoftcap: meta(file, finalSoftcapKey) === undefined || metaNumber(file, finalSoftcapKey) === 0 ? null : positive(file, finalSoftcapKey, 0),
      slidingWindow: window > 0 ? window : null,
      slidingLayers,
      slidingRopeTheta: window > 0 ? positive(file, `${a}.rope.freq_base_swa`, DEFAULT_SLIDING_ROPE_BASE) : ropeTheta,
    },
  };
}

/** config.json fields transformers' Gemma3TextConfig has beside the llama ones (for a folder written from the file). */
export function gemma3ConfigFields(shape: GgufGemma3Shape): Record<string, unknown> {
  const { gemma3 } = shape;
  const full = { rope_type: shape.ropeScaling.kind === 'linear' ? 'linear' : 'default', rope_theta: shape.ropeTheta, ...(shape.ropeScaling.kind === 'linear' ? { factor: shape.ropeScaling.factor } : {}) };
  return {
    architectures: ['Gemma3ForCausalLM'],
    model_type: 'gemma3_text',
    hidden_act: 'gelu_pytorch_tanh',
    hidden_activation: 'gelu_pytorch_tanh',
    query_pre_attn_scalar: gemma3.queryPreAttnScalar,
    final_logit_softcapping: gemma3.finalSoftcap,
    attn_logit_softcapping: null,
    sliding_window: gemma3.slidingWindow,
    layer_types: gemma3.slidingLayers.map((slides) => (slides ? 'sliding_attention' : 'full_attention')),
    rope_parameters: { full_attention: full, sliding_attention: { rope_type: 'default', rope_theta: gemma3.slidingRopeTheta } },
  };
}

export function gemma3ReportLines(shape: GgufGemma3Shape): string[] {
  const { gemma3 } = shape;
  const sliding = gemma3.slidingLayers.flatMap((slides, i) => (slides ? [i] : []));
  const global = gemma3.slidingLayers.flatMap((slides, i) => (slides ? [] : [i]));
  const list = (layers: number[]) => `${layers.slice(0, 6).join(', ')}${layers.length > 6 ? ', …' : ''}`;
  const cap = gemma3.finalSoftcap === null ? 'no soft-capping' : `final logits soft-capped at ${gemma3.finalSoftcap}`;
  return [
    `GGUF gemma3: embeddings × sqrt(${shape.dim}), 4 RMSNorms a layer and q/k norms per head, GELU (tanh) MLP, query scale 1/sqrt(${gemma3.queryPreAttnScalar}) from ${gemma3.queryScaleFrom}, ${cap}, ${shape.nHeads} heads of ${shape.headDim}`,
    gemma3.slidingWindow === null
      ? `GGUF gemma3: no sliding window: full attention on every layer`
      : `GGUF gemma3: sliding window of ${gemma3.slidingWindow} positions on ${sliding.length} of ${shape.nLayers} layers (rope base ${gemma3.slidingRopeTheta}, unscaled); full attention on layers ${list(global)} (rope base ${shape.ropeTheta}${shape.ropeScaling.kind === 'linear' ? `, linear scaling ×${shape.ropeScaling.factor}` : ''})`,
  ];
}

/** The model's weights in the converter's Gemma checkpoint (as readGemma2Checkpoint, with q/k norms and two rope tables). */
export async function readGemma3Checkpoint(file: GgufFile, shape: GgufGemma3Shape, projection: CheckpointProjection = 'values'): Promise<Gemma2Checkpoint> {
  const { read, matrix } = tensorReaders(file, projection);
  const tokenEmbedding = await matrix('token_embd.weight');
  const layers = await readGemmaLayers(file, shape.nLayers, projection, true);
  const global = ropeTables(shape, null);
  const local = ropeTables({ ...shape, ropeTheta: shape.gemma3.slidingRopeTheta, ropeScaling: { kind: 'none' } }, null);
  const anySliding = shape.gemma3.slidingLayers.some(Boolean);
  return {
    family: 'gemma3',
    header: checkpointHeader(shape),
    headDim: shape.headDim,
    kvDim: shape.headDim * shape.nKvHeads,
    get tokenEmbedding() { return tokenEmbedding(); },
    layers,
    finalNorm: await read('output_norm.weight'),
    ropeCos: global.real,
    ropeSin: global.imag,
    ...(anySliding ? { slidingRope: { cos: local.real, sin: local.imag } } : {}),
    embeddingScale: Math.sqrt(shape.dim),
    queryScale: shape.gemma3.queryScale,
    attentionSoftcap: null,
    finalSoftcap: shape.gemma3.finalSoftcap,
    slidingWindow: shape.gemma3.slidingWindow ?? 0,
    slidingLayers: shape.gemma3.slidingLayers,
  };
}
