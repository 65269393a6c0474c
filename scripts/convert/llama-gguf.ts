/**
 * A llama2.c checkpoint and tokenizer as a llama.cpp GGUF (architecture "llama", vocabulary
 * type "llama", i.e. SentencePiece-style pieces with scores), so llama.cpp runs exactly the
 * weights and vocabulary the ONNX converter gives this project.
 *
 * Weights stay in llama2.c's layout: llama.cpp's llama architecture rotates adjacent pairs
 * (as llama2.c does), so q and k need none of the HF rotate-half permutation. `Q4_0` stores
 * every matrix whose rows are a whole number of 32-element blocks as Q4_0 (q4-blocks.ts, the
 * blocks the converter's `--dtype q4` writes), the rest as F32, as llama.cpp's quantizer
 * would fall back; norms are always F32. The tied output projection reads token_embd.
 */
import { LLAMA2C_BOS_ID, LLAMA2C_EOS_ID, LLAMA2C_RMS_NORM_EPS } from '../../src/convert/hf-config.js';
import type { DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import { hfPiece, parseLlama2cTokenizer } from '../../src/convert/llama2c-tokenizer.js';
import { GgmlType, type GgufModel, type GgufTensor, type GgufValue } from './gguf-writer.js';
import { packQ4_0, Q4_BLOCK, quantizeQ4Rows } from '../../src/graph/q4-blocks.js';
import { inferRopeTheta } from '../../src/graph/rope.js';

export type GgufWeightType = 'F32' | 'Q4_0';

/** llama_ftype: LLAMA_FTYPE_ALL_F32 = 0, LLAMA_FTYPE_MOSTLY_Q4_0 = 2. */
const FILE_TYPE: Record<GgufWeightType, number> = { F32: 0, Q4_0: 2 };

/** llama_token_type: normal 1, unknown 2, control 3, byte 6. */
function tokenType(id: number, piece: string): number {
  if (id === 0) return 2;
  if (id === LLAMA2C_BOS_ID || id === LLAMA2C_EOS_ID) return 3;
  return /^<0x[0-9A-F]{2}>$/.test(piece) ? 6 : 1;
}

export interface LlamaGgufOptions {
  weights: GgufWeightType;
  name?: string;
  /** llama.context_length; the checkpoint's seq_len by default. */
  contextLength?: number;
}

export function buildLlamaGguf(ckpt: DecoderCheckpoint, tokenizer: Uint8Array, options: LlamaGgufOptions): GgufModel {
  const { dim, hiddenDim, nLayers, nHeads, nKvHeads, vocabSize, seqLen, sharedClassifier } = ckpt.header;
  const { kvDim, headDim } = ckpt;
  const { entries } = parseLlama2cTokenizer(tokenizer);
  if (entries.length !== vocabSize) throw new Error(`tokenizer has ${entries.length} pieces, the checkpoint ${vocabSize}`);
  const pieces = entries.map((entry) => hfPiece(entry.raw));

  const tensors: GgufTensor[] = [];
  const vector = (name: string, data: Float32Array) =>
    tensors.push({ name, dims: [data.length], type: GgmlType.F32, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) });
  /** `data` is nn.Linear [rows = out, cols = in]. */
  const matrix = (name: string, data: Float32Array, rows: number, cols: number) => {
    if (options.weights === 'Q4_0' && cols % Q4_BLOCK === 0) {
      tensors.push({ name, dims: [cols, rows], type: GgmlType.Q4_0, data: packQ4_0(quantizeQ4Rows(data, rows, cols)) });
    } else {
      tensors.push({ name, dims: [cols, rows], type: GgmlType.F32, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) });
    }
  };

  matrix('token_embd.weight', ckpt.tokenEmbedding, vocabSize, dim);
  vector('output_norm.weight', ckpt.rmsFinal);
  if (!sharedClassifier) matrix('output.weight', ckpt.classifier, vocabSize, dim);
  ckpt.layers.forEach((layer, i) => {
    vector(`blk.${i}.attn_norm.weight`, layer.rmsAtt);
    matrix(`blk.${i}.attn_q.weight`, layer.wq, dim, dim);
    matrix(`blk.${i}.attn_k.weight`, layer.wk, kvDim, dim);
    matrix(`blk.${i}.attn_v.weight`, layer.wv, kvDim, dim);
    matrix(`blk.${i}.attn_output.weight`, layer.wo, dim, dim);
    vector(`blk.${i}.ffn_norm.weight`, layer.rmsFfn);
    matrix(`blk.${i}.ffn_gate.weight`, layer.w1, hiddenDim, dim);
    matrix(`blk.${i}.ffn_down.weight`, layer.w2, dim, hiddenDim);
    matrix(`blk.${i}.ffn_up.weight`, layer.w3, hiddenDim, dim);
  });

  const u32 = (value: number): GgufValue => ({ type: 'uint32', value });
  const metadata: Array<[string, GgufValue]> = [
    ['general.architecture', { type: 'string', value: 'llama' }],
    ['general.name', { type: 'string', value: options.name ?? 'llama' }],
    ['general.file_type', u32(FILE_TYPE[options.weights])],
    ['llama.vocab_size', u32(vocabSize)],
    ['llama.context_length', u32(options.contextLength ?? seqLen)],
    ['llama.embedding_length', u32(dim)],
    ['llama.block_count', u32(nLayers)],
    ['llama.feed_forward_length', u32(hiddenDim)],
    ['llama.rope.dimension_count', u32(headDim)],
    ['llama.attention.head_count', u32(nHeads)],
    ['llama.attention.head_count_kv', u32(nKvHeads)],
    ['llama.attention.layer_norm_rms_epsilon', { type: 'float32', value: LLAMA2C_RMS_NORM_EPS }],
    ['llama.rope.freq_base', { type: 'float32', value: inferRopeTheta(ckpt.freqCisReal, ckpt.freqCisImag, seqLen, headDim) }],
    ['tokenizer.ggml.model', { type: 'string', value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: 'strings', value: pieces }],
    ['tokenizer.ggml.scores', { type: 'float32s', value: entries.map((entry) => entry.score) }],
    ['tokenizer.ggml.token_type', { type: 'int32s', value: pieces.map((piece, id) => tokenType(id, piece)) }],
    ['tokenizer.ggml.unknown_token_id', u32(0)],
    ['tokenizer.ggml.bos_token_id', u32(LLAMA2C_BOS_ID)],
    ['tokenizer.ggml.eos_token_id', u32(LLAMA2C_EOS_ID)],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: true }],
    ['tokenizer.ggml.add_eos_token', { type: 'bool', value: false }],
  ];
  return { metadata, tensors };
}
