/**
 * A GGUF of architecture `llama` (Llama 2/3, TinyLlama, SmolLM, Mistral-style dense
 * models) as the converter's checkpoint (src/graph/decoder-checkpoint.ts): the same
 * decoder the project's ONNX graphs are built from, so a GGUF gets this project's own graph
 * (in-place KV, num_logits_to_keep, fused projections).
 *
 * Layout facts: llama.cpp's converter stores q/k rows in the adjacent-pairs RoPE order
 * llama2.c uses (it undoes HF's rotate-half permutation), and a matrix with ggml dims
 * [in, out] is row-major nn.Linear [out, in]: both exactly llama2.c's layout, so tensors
 * map one to one. Every weight is dequantized to float32 with ggml's own arithmetic
 * (ggml-types.ts): the graph computes with exactly the weights llama.cpp dequantizes.
 *
 * `qwen2` is the same decoder with q/k/v projection biases, its q/k rows in the HF
 * rotate-half order (llama.cpp's NEOX rope: its converter does not permute them), put back
 * into the adjacent-pairs order here. `qwen3` and `phi3` differ from it as their files in
 * ./architectures/ say (per-head q/k norms; fused q/k/v and gate/up, LongRoPE).
 *
 * Anything the graph cannot express exactly is refused by name: other architectures,
 * partial rotary, YaRN scaling, biases or extra tensors, unsupported types.
 */
import type { DecoderCheckpoint, DecoderHeader, DecoderLayer } from '../graph/decoder-checkpoint.js';
import { GgufFormatError, readTensorBytes, type GgufFile, type GgufMetadataValue, type GgufTensorInfo } from './gguf-file.js';
import { blockFormOf, dequantize, SUPPORTED_TYPE_NAMES } from './ggml-types.js';
import { hfRowSource } from '../graph/rope.js';
import { QWEN3, qwen3LayerTensors, readQwen3HeadNorms } from './architectures/qwen3.js';
import { QWEN3MOE, qwen3moeExperts, routedExpertTensors, readRoutedExperts } from './architectures/qwen3moe.js';
import { QWEN2MOE, qwen2moeExperts, qwen2moeSharedTensors, readQwen2moeSharedExpert } from './architectures/qwen2moe.js';
import { fusedRows, longRopeTensor, PHI3, phi3Context, phi3LayerTensors, phi3LongRope, type LongRope } from './architectures/phi3.js';

/** Rows of a rotate-half (HF) ordered [heads * headDim, cols] matrix in adjacent-pairs order: the inverse of permuteRowsForHfRope. */
function rotateHalfToAdjacentPairs(w: Float32Array, heads: number, headDim: number, cols: number): Float32Array {
  const out = new Float32Array(w.length);
  for (let h = 0; h < heads; h++) {
    for (let j = 0; j < headDim; j++) {
      const from = (h * headDim + j) * cols;
      out.set(w.subarray(from, from + cols), (h * headDim + hfRowSource(j, headDim)) * cols);
    }
  }
  return out;
}

export const SUPPORTED_ARCHITECTURES = ['llama', 'qwen2', QWEN2MOE, QWEN3, QWEN3MOE, PHI3, 'gemma2', 'gemma3'] as const;

/** Architectures whose RoPE is llama.cpp's NEOX (rotate-half): their q/k rows are in HF order in the file. */
const NEOX_ROPE = new Set(['qwen2', QWEN2MOE, QWEN3, QWEN3MOE, PHI3]);

/** Positions the RoPE tables cover at most (a Llama 3.1 file says 131072): the engine's context. */
export const MAX_GGUF_CONTEXT = 32768;

export class GgufModelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GgufModelError';
  }
}

export interface GgufLlamaShape {
  architecture: string;
  name: string | null;
  dim: number;
  hiddenDim: number;
  nLayers: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  vocabSize: number;
  contextLength: number;
  /** What the file says, before MAX_GGUF_CONTEXT. */
  fileContextLength: number;
  rmsNormEps: number;
  ropeTheta: number;
  /** rope_freqs.weight (Llama 3.1 scaling) divides each pair's frequency; linear scaling divides positions. */
  ropeScaling: { kind: 'none' } | { kind: 'linear'; factor: number } | { kind: 'llama3-freqs' } | LongRope;
  /** rope.scaling.attn_factor: ggml's rope multiplies cos and sin by it (LongRoPE's attention factor). */
  ropeAttentionFactor: number;
  tiedEmbeddings: boolean;
  /** qwen2: q/k/v biases, q/k rows in rotate-half order. */
  qkvBias: boolean;
  /** qwen3: RMSNorm over each head of q and of k before RoPE. */
  qkNorm: boolean;
  /** qwen2moe / qwen3moe: experts in place of the MLP (expert_count, expert_used_count, expert_feed_forward_length); qwen2moe's shared expert's width. */
  moe?: { count: number; used: number; hidden: number; normalize: boolean; sharedHidden?: number };
  /** phi3: q/k/v rows in one attn_qkv matrix; gate and up rows in one ffn_up matrix. */
  fusedQkv: boolean;
  fusedGateUp: boolean;
  ropeOrder: 'adjacent-pairs' | 'rotate-half';
  /** Tensor counts by ggml type name, for the startup report. */
  tensorTypes: Map<string, number>;
}

export function meta(file: GgufFile, key: string): GgufMetadataValue | undefined {
  return file.metadata.get(key);
}

export function metaNumber(file: GgufFile, key: string, fallback?: number): number {
  const value = meta(file, key);
  if (value === undefined) {
    if (fallback !== undefined) return fallback;
    throw new GgufModelError(`the file has no ${key}`);
  }
  if (typeof value !== 'number' && typeof value !== 'bigint') throw new GgufModelError(`${key} is not a number`);
  return Number(value);
}

export function architectureOf(file: GgufFile): string {
  const value = meta(file, 'general.architecture');
  if (typeof value !== 'string') throw new GgufModelError('the file has no general.architecture');
  return value;
}

const LAYER_TENSORS = ['attn_norm', 'attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_norm', 'ffn_gate', 'ffn_down', 'ffn_up'] as const;

/** Tensor counts by ggml type name; refuses a type this engine cannot execute, naming the tensor. */
export function tensorTypesOf(file: GgufFile): Map<string, number> {
  const tensorTypes = new Map<string, number>();
  for (const tensor of file.tensors) {
    if (!tensor.type) throw new GgufModelError(`tensor ${tensor.name} has ggml type id ${tensor.typeId}, unknown to this engine (supported: ${SUPPORTED_TYPE_NAMES.join(', ')})`);
    if (!tensor.type.dequantize) {
      throw new GgufModelError(`tensor ${tensor.name} is ${tensor.type.name}, a type this engine cannot execute (supported: ${SUPPORTED_TYPE_NAMES.join(', ')})`);
    }
    tensorTypes.set(tensor.type.name, (tensorTypes.get(tensor.type.name) ?? 0) + 1);
  }
  return tensorTypes;
}

/** The file holds exactly the `expected` tensors (name → ggml dims), or a GgufModelError names the first that differs. */
export function expectTensors(file: GgufFile, expected: ReadonlyMap<string, number[]>, layout: string): void {
  const byName = new Map(file.tensors.map((t) => [t.name, t]));
  for (const [name, shape] of expected) {
    const tensor = byName.get(name);
    if (!tensor) throw new GgufModelError(`tensor ${name} is missing`);
    if (tensor.dims.join(',') !== shape.join(',')) throw new GgufModelError(`tensor ${name} is [${tensor.dims.join(', ')}], expected [${shape.join(', ')}]`);
  }
  const extra = file.tensors.filter((t) => !expected.has(t.name));
  if (extra.length > 0) {
    throw new GgufModelError(`tensors outside ${layout}: ${extra.slice(0, 5).map((t) => t.name).join(', ')}${extra.length > 5 ? ', ...' : ''}`);
  }
}

/**
 * A decoder's sizes as every architecture here keys them (`<arch>.embedding_length`, ...), with
 * the checks they share: an even head size (llama.cpp's: attention.key_length, else
 * embedding_length / head_count), query heads a multiple of key/value heads, values as wide as
 * keys, rotary over the whole head; the vocabulary from token_embd.weight.
 */
export function decoderDimensions(file: GgufFile, a: string) {
  const dim = metaNumber(file, `${a}.embedding_length`);
  const nLayers = metaNumber(file, `${a}.block_count`);
  const nHeads = metaNumber(file, `${a}.attention.head_count`);
  const nKvHeads = metaNumber(file, `${a}.attention.head_count_kv`, nHeads);
  const hiddenDim = metaNumber(file, `${a}.feed_forward_length`);
  const headDim = metaNumber(file, `${a}.attention.key_length`, dim / nHeads);
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) throw new GgufModelError(`the head size ${headDim} (attention.key_length, or embedding_length ${dim} / head_count ${nHeads}) is not an even integer`);
  if (nHeads % nKvHeads !== 0) throw new GgufModelError(`head_count ${nHeads} is not a multiple of head_count_kv ${nKvHeads}`);
  const valueLength = metaNumber(file, `${a}.attention.value_length`, headDim);
  if (valueLength !== headDim) throw new GgufModelError(`attention.value_length ${valueLength} differs from attention.key_length ${headDim}: not supported`);
  const ropeDims = metaNumber(file, `${a}.rope.dimension_count`, headDim);
  if (ropeDims !== headDim) throw new GgufModelError(`partial rotary (rope.dimension_count ${ropeDims} of head size ${headDim}) is not supported`);
  const embedding = file.tensors.find((t) => t.name === 'token_embd.weight');
  if (!embedding || embedding.dims.length !== 2 || embedding.dims[0] !== dim) throw new GgufModelError(`token_embd.weight is missing or not [${dim}, vocab]`);
  return { dim, nLayers, nHeads, nKvHeads, hiddenDim, headDim, vocabSize: embedding.dims[1]! };
}

/** Reads and checks the model's shape; throws a GgufModelError naming what is unsupported. */
export function llamaShapeOf(file: GgufFile): GgufLlamaShape {
  const architecture = architectureOf(file);
  if (!(SUPPORTED_ARCHITECTURES as readonly string[]).includes(architecture)) {
    throw new GgufModelError(`architecture "${architecture}" is not supported (supported: ${SUPPORTED_ARCHITECTURES.join(', ')})`);
  }
  const a = architecture;
  const byName = new Map(file.tensors.map((t) => [t.name, t]));
  const tensorTypes = tensorTypesOf(file);
  const { dim, nLayers, nHeads, nKvHeads, hiddenDim, headDim, vocabSize } = decoderDimensions(file, a);
  let moe: GgufLlamaShape['moe'];
  try {
    const number = (key: string) => metaNumber(file, key);
    moe = architecture === QWEN3MOE ? qwen3moeExperts(number) : architecture === QWEN2MOE ? qwen2moeExperts(number, (key) => meta(file, key) !== undefined) : undefined;
  } catch (error) {
    throw error instanceof GgufModelError ? error : new GgufModelError((error as Error).message);
  }
  if (!moe && meta(file, `${a}.expert_count`) !== undefined && metaNumber(file, `${a}.expert_count`) > 0) throw new GgufModelError('mixture-of-experts llama files are not supported');
  const output = byName.get('output.weight');
  const expected = new Map<string, number[]>([
    ['token_embd.weight', [dim, vocabSize]],
    ['output_norm.weight', [dim]],
  ]);
  if (output) expected.set('output.weight', [dim, vocabSize]);
  const kvDim = headDim * nKvHeads;
  const qDim = headDim * nHeads;
  const fusedQkv = architecture === PHI3 && byName.has('blk.0.attn_qkv.weight');
  for (let i = 0; i < nLayers; i++) {
    const shapes: Record<(typeof LAYER_TENSORS)[number], number[]> = {
      attn_norm: [dim], attn_q: [dim, qDim], attn_k: [dim, kvDim], attn_v: [dim, kvDim], attn_output: [qDim, dim],
      ffn_norm: [dim], ffn_gate: [dim, hiddenDim], ffn_down: [hiddenDim, dim], ffn_up: [dim, hiddenDim],
    };
    for (const part of LAYER_TENSORS) if (!(moe && part.startsWith('ffn_') && part !== 'ffn_norm')) expected.set(`blk.${i}.${part}.weight`, shapes[part]);
    if (moe) for (const [name, dims] of routedExpertTensors(i, dim, moe)) expected.set(name, dims);
    if (moe?.sharedHidden) {
      for (const [name, dims] of qwen2moeSharedTensors(i, dim, moe.sharedHidden, byName.get(`blk.${i}.ffn_gate_inp_shexp.weight`)?.dims)) expected.set(name, dims);
    }
    if (architecture === 'qwen2' || architecture === QWEN2MOE) {
      expected.set(`blk.${i}.attn_q.bias`, [qDim]);
      expected.set(`blk.${i}.attn_k.bias`, [kvDim]);
      expected.set(`blk.${i}.attn_v.bias`, [kvDim]);
    }
    if (architecture === QWEN3 || architecture === QWEN3MOE) for (const [name, dims] of qwen3LayerTensors(i, headDim)) expected.set(name, dims);
    if (architecture === PHI3) phi3LayerTensors(expected, i, { dim, qDim, kvDim, hiddenDim }, fusedQkv);
  }
  const fileContextLength = metaNumber(file, `${a}.context_length`);
  let contextLength = Math.min(fileContextLength, MAX_GGUF_CONTEXT);
  if (architecture === PHI3) contextLength = phi3Context(contextLength, metaNumber(file, `${a}.attention.sliding_window`, 0));

  let ropeScaling: GgufLlamaShape['ropeScaling'] = { kind: 'none' };
  const scalingType = meta(file, `${a}.rope.scaling.type`);
  const longRope = architecture === PHI3 ? phi3LongRope((name) => byName.has(name), headDim, contextLength, metaNumber(file, `${a}.rope.scaling.original_context_length`, fileContextLength)) : null;
  if (scalingType === 'linear') ropeScaling = { kind: 'linear', factor: metaNumber(file, `${a}.rope.scaling.factor`) };
  else if (scalingType === 'longrope' && longRope) ropeScaling = longRope.scaling;
  else if (scalingType !== undefined && scalingType !== 'none') throw new GgufModelError(`rope scaling "${String(scalingType)}" is not supported (none, linear, Llama 3's rope_freqs and phi3's LongRoPE factors are)`);
  if (longRope) {
    if (ropeScaling.kind === 'linear') throw new GgufModelError('LongRoPE factors together with linear rope scaling are not supported');
    for (const [name, dims] of longRope.tensors) expected.set(name, dims);
    ropeScaling = longRope.scaling;
  }
  if (byName.has('rope_freqs.weight')) {
    if (ropeScaling.kind !== 'none') throw new GgufModelError('rope_freqs.weight together with linear rope scaling is not supported');
    expected.set('rope_freqs.weight', [headDim / 2]);
    ropeScaling = { kind: 'llama3-freqs' };
  }

  expectTensors(file, expected, 'the llama layout this engine builds');
  const name = meta(file, 'general.name');
  return {
    architecture,
    name: typeof name === 'string' ? name : null,
    dim,
    hiddenDim,
    nLayers,
    nHeads,
    nKvHeads,
    headDim,
    vocabSize,
    contextLength,
    fileContextLength,
    rmsNormEps: metaNumber(file, `${a}.attention.layer_norm_rms_epsilon`),
    ropeTheta: metaNumber(file, `${a}.rope.freq_base`, 10000),
    ropeScaling,
    ropeAttentionFactor: metaNumber(file, `${a}.rope.scaling.attn_factor`, 1),
    tiedEmbeddings: !output,
    qkvBias: architecture === 'qwen2' || architecture === QWEN2MOE,
    qkNorm: architecture === QWEN3 || architecture === QWEN3MOE,
    ...(moe ? { moe } : {}),
    fusedQkv,
    fusedGateUp: architecture === PHI3,
    ropeOrder: NEOX_ROPE.has(architecture) ? 'rotate-half' : 'adjacent-pairs',
    tensorTypes,
  };
}

/**
 * What a checkpoint read holds in each weight element: its float32 value (ggml's
 * dequantization), or, for the quantized-weight pass (quantized-weights.ts), its block's
 * scale or min (ggml-types.ts BlockForm; NaN scales mark float-typed tensors). The graph
 * builder moves and scales all three alike, so each graph weight's scales line up with its values.
 */
export type CheckpointProjection = 'values' | 'scales' | 'mins';

/** A tensor's bytes as the projection's floats (sync: the bytes are already read). */
function project(tensor: GgufTensorInfo, bytes: Uint8Array, projection: CheckpointProjection): Float32Array {
  const elements = tensor.dims.reduce((x, y) => x * y, 1);
  try {
    if (projection === 'values') return dequantize(tensor.type!, bytes, elements);
    const form = blockFormOf(tensor.type!, bytes, elements);
    if (!form) return projection === 'scales' ? new Float32Array(elements).fill(Number.NaN) : new Float32Array(elements);
    return projection === 'scales' ? form.scale : form.min;
  } catch (error) {
    if (error instanceof GgufFormatError) throw error;
    throw new GgufFormatError(`tensor ${tensor.name}: ${(error as Error).message}`);
  }
}

async function floats(file: GgufFile, tensor: GgufTensorInfo, projection: CheckpointProjection): Promise<Float32Array> {
  return project(tensor, await readTensorBytes(file, tensor), projection);
}

/**
 * RoPE tables [context, headDim / 2] as ggml computes the angles: pair i at position p turns
 * by p * theta^(-2i / headDim), divided by the pair's frequency factor (Llama 3.1's rope_freqs,
 * LongRoPE's long or short factors) or by a linear factor; cos and sin times rope.scaling.attn_factor.
 */
export function ropeTables(shape: GgufLlamaShape, freqFactors: Float32Array | null): { real: Float32Array; imag: Float32Array } {
  const half = shape.headDim / 2;
  const real = new Float32Array(shape.contextLength * half);
  const imag = new Float32Array(shape.contextLength * half);
  const positionScale = shape.ropeScaling.kind === 'linear' ? 1 / shape.ropeScaling.factor : 1;
  for (let i = 0; i < half; i++) {
    const frequency = Math.pow(shape.ropeTheta, (-2 * i) / shape.headDim) / (freqFactors ? freqFactors[i] : 1);
    for (let p = 0; p < shape.contextLength; p++) {
      const angle = p * positionScale * frequency;
      real[p * half + i] = Math.cos(angle) * shape.ropeAttentionFactor;
      imag[p * half + i] = Math.sin(angle) * shape.ropeAttentionFactor;
    }
  }
  return { real, imag };
}

/**
 * How a checkpoint reader reads the file: `read` a tensor's values (norms, biases), `matrix`
 * a weight in `projection`, kept as the file's bytes and made float32 when the graph builder
 * reads it (once each): the builder holds one matrix's floats at a time, not the whole model's.
 */
export function tensorReaders(file: GgufFile, projection: CheckpointProjection) {
  const byName = new Map(file.tensors.map((t) => [t.name, t]));
  return {
    read: (name: string) => floats(file, byName.get(name)!, 'values'),
    matrix: async (name: string): Promise<() => Float32Array> => {
      const tensor = byName.get(name)!;
      const bytes = await readTensorBytes(file, tensor);
      return () => project(tensor, bytes, projection);
    },
  };
}

/** The converter's header for the file's shape (the decoder's sizes, its context, a tied head or not). */
export function checkpointHeader(shape: GgufLlamaShape): DecoderHeader {
  return {
    dim: shape.dim,
    hiddenDim: shape.hiddenDim,
    nLayers: shape.nLayers,
    nHeads: shape.nHeads,
    nKvHeads: shape.nKvHeads,
    vocabSize: shape.vocabSize,
    seqLen: shape.contextLength,
    sharedClassifier: shape.tiedEmbeddings,
  };
}

/**
 * The model's weights, dequantized (float32) in the converter's checkpoint layout; with
 * `projection` scales or mins, the matrices hold their blocks' factors instead (norms,
 * biases and RoPE tables stay values: no graph weight built from them is quantized).
 */
export async function readLlamaCheckpoint(file: GgufFile, shape: GgufLlamaShape, projection: CheckpointProjection = 'values'): Promise<DecoderCheckpoint> {
  const { read, matrix } = tensorReaders(file, projection);
  const tokenEmbedding = await matrix('token_embd.weight');
  const classifier = shape.tiedEmbeddings ? tokenEmbedding : await matrix('output.weight');
  const layers: DecoderLayer[] = [];
  const { nHeads, nKvHeads, headDim, dim } = shape;
  const pairs = (w: Float32Array, heads: number, cols: number) =>
    shape.ropeOrder === 'rotate-half' ? rotateHalfToAdjacentPairs(w, heads, headDim, cols) : w;
  for (let i = 0; i < shape.nLayers; i++) {
    const p = `blk.${i}.`;
    const parts = (names: string[]) => Promise.all(names.map((part) => matrix(`${p}${part}.weight`)));
    const [wo] = await parts(['attn_output']);
    const moe = shape.moe;
    const [w2] = moe ? [null] : await parts(['ffn_down']);
    const [wq, wk, wv] = shape.fusedQkv
      ? fusedRows(await matrix(`${p}attn_qkv.weight`), [nHeads * headDim, nKvHeads * headDim, nKvHeads * headDim], dim)
      : await parts(['attn_q', 'attn_k', 'attn_v']);
    const [w1, w3] = moe ? [null, null] : shape.fusedGateUp ? fusedRows(await matrix(`${p}ffn_up.weight`), [shape.hiddenDim, shape.hiddenDim], dim) : await parts(['ffn_gate', 'ffn_up']);
    const shared = moe?.sharedHidden ? await readQwen2moeSharedExpert(matrix, p, moe.sharedHidden) : undefined;
    const experts = moe ? await readRoutedExperts(matrix, p, moe, shared) : null;
    const dense = (w: (() => Float32Array) | null) => {
      if (!w) throw new GgufModelError(`${shape.architecture} is built in the fused and inplace flavours only (its experts are one MoE node)`);
      return w();
    };
    layers.push({
      ...(shape.qkvBias
        ? {
            attentionBias: {
              q: pairs(await read(`${p}attn_q.bias`), nHeads, 1),
              k: pairs(await read(`${p}attn_k.bias`), nKvHeads, 1),
              v: await read(`${p}attn_v.bias`),
            },
          }
        : {}),
      ...(shape.qkNorm ? { qkNorm: await readQwen3HeadNorms(read, p, (w) => pairs(w, 1, 1), shape.rmsNormEps) } : {}),
      rmsAtt: await read(`${p}attn_norm.weight`),
      rmsFfn: await read(`${p}ffn_norm.weight`),
      get wq() { return pairs(wq(), nHeads, dim); },
      get wk() { return pairs(wk(), nKvHeads, dim); },
      get wv() { return wv(); },
      get wo() { return wo(); },
      get w1() { return dense(w1); },
      get w2() { return dense(w2); },
      get w3() { return dense(w3); },
      ...(experts ? { experts } : {}),
    });
  }
  const { ropeScaling } = shape;
  const freqFactors =
    ropeScaling.kind === 'llama3-freqs' ? await read('rope_freqs.weight') : ropeScaling.kind === 'longrope' ? await read(longRopeTensor(ropeScaling)) : null;
  const { real, imag } = ropeTables(shape, freqFactors);
  const rmsFinal = await read('output_norm.weight');
  return {
    header: checkpointHeader(shape),
    headDim: shape.headDim,
    kvDim: shape.headDim * shape.nKvHeads,
    get tokenEmbedding() { return tokenEmbedding(); },
    layers,
    rmsFinal,
    freqCisReal: real,
    freqCisImag: imag,
    get classifier() { return classifier(); },
  };
}
