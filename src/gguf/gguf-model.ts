/**
 * A GGUF file as this project's model folder contents: config.json, generation_config.json,
 * tokenizer.json, tokenizer_config.json and the decoder graph the converter builds
 * (src/convert/llama-onnx-graph.ts) from the file's weights, dequantized exactly as
 * ggml does. Runtime-neutral: the caller provides the file's bytes through a ByteSource
 * and decides where the graph's weights go (external data under Node).
 */
import { buildLlamaGraph, EXTRA_OPSETS, type GraphOps } from '../convert/llama-onnx-graph.js';
import { encodeOnnxModel, type OnnxGraph } from '../convert/onnx-writer.js';
import { ONNX_IR_VERSION, ONNX_OPSET } from '../convert/convert-llama2c-model.js';
import { readGguf, type ByteSource, type GgufFile } from './gguf-file.js';
import { ggufTokenizerFiles, type GgufTokenizerFiles } from './gguf-tokenizer.js';
import { llamaShapeOf, readLlamaCheckpoint, type GgufLlamaShape } from './llama-checkpoint.js';

/** Bumped whenever the folder made from the same file would differ (the Node cache keys on it). */
export const GGUF_CONVERSION_VERSION = 1;

export interface GgufModel {
  file: GgufFile;
  shape: GgufLlamaShape;
  tokenizer: GgufTokenizerFiles;
  config: Record<string, unknown>;
  generationConfig: Record<string, unknown>;
}

/** Reads the header and checks everything the graph needs, before any weight is read. */
export async function openGgufModel(source: ByteSource): Promise<GgufModel> {
  const file = await readGguf(source);
  const shape = llamaShapeOf(file);
  const tokenizer = ggufTokenizerFiles(file, shape.contextLength);
  const tokens = (file.metadata.get('tokenizer.ggml.tokens') as string[]).length;
  if (tokens !== shape.vocabSize) {
    // llama.cpp pads some embeddings past the vocabulary; ids past it are simply never produced by the tokenizer.
    if (tokens > shape.vocabSize) throw new Error(`the tokenizer has ${tokens} tokens, the embedding only ${shape.vocabSize} rows`);
  }
  const config = {
    architectures: [shape.architecture === 'qwen2' ? 'Qwen2ForCausalLM' : 'LlamaForCausalLM'],
    model_type: shape.architecture,
    hidden_size: shape.dim,
    intermediate_size: shape.hiddenDim,
    num_hidden_layers: shape.nLayers,
    num_attention_heads: shape.nHeads,
    num_key_value_heads: shape.nKvHeads,
    head_dim: shape.headDim,
    vocab_size: shape.vocabSize,
    max_position_embeddings: shape.contextLength,
    rms_norm_eps: shape.rmsNormEps,
    rope_theta: shape.ropeTheta,
    rope_scaling: shape.ropeScaling.kind === 'linear' ? { rope_type: 'linear', factor: shape.ropeScaling.factor } : null,
    tie_word_embeddings: shape.tiedEmbeddings,
    bos_token_id: tokenizer.bosTokenId ?? null,
    eos_token_id: tokenizer.eosTokenIds.length === 1 ? tokenizer.eosTokenIds[0] : tokenizer.eosTokenIds,
    hidden_act: 'silu',
    torch_dtype: 'float32',
    use_cache: true,
  };
  const generationConfig = { bos_token_id: tokenizer.bosTokenId ?? null, eos_token_id: tokenizer.eosTokenIds };
  return { file, shape, tokenizer, config, generationConfig };
}

/** The decoder graph in flavour `ops`, with float32 weights inline (the caller may move them out). */
export async function buildGgufGraph(model: GgufModel, ops: GraphOps): Promise<OnnxGraph> {
  const checkpoint = await readLlamaCheckpoint(model.file, model.shape);
  return buildLlamaGraph(checkpoint, { rmsNormEps: model.shape.rmsNormEps, ops });
}

export function encodeGgufGraph(graph: OnnxGraph, ops: GraphOps, model: GgufModel): Uint8Array {
  return encodeOnnxModel({
    extraOpsets: EXTRA_OPSETS[ops],
    irVersion: ONNX_IR_VERSION,
    opsetVersion: ONNX_OPSET,
    producerName: 'edge-llm gguf',
    producerVersion: String(GGUF_CONVERSION_VERSION),
    docString: `${model.shape.architecture} decoder built from the GGUF "${model.shape.name ?? 'unnamed'}", weights dequantized to float32 as ggml does.`,
    graph,
  });
}

/** The startup report's lines: architecture, tensor types and how each is executed. */
export function ggufReportLines(model: GgufModel): string[] {
  const { shape } = model;
  const types = [...shape.tensorTypes.entries()].map(([type, count]) => `${type} ×${count}`).join(', ');
  const quantized = [...shape.tensorTypes.keys()].filter((type) => type !== 'F32');
  return [
    `GGUF: architecture ${shape.architecture}${shape.name ? ` ("${shape.name}")` : ''}, ${shape.nLayers} layers, ${shape.nHeads} heads / ${shape.nKvHeads} key-value heads, rope theta ${shape.ropeTheta}${shape.ropeScaling.kind === 'none' ? '' : `, rope scaling ${shape.ropeScaling.kind}`}, ${shape.tiedEmbeddings ? 'tied' : 'untied'} output head`,
    `GGUF tensors: ${types}; executed as float32 MatMul/Gather weights${quantized.length > 0 ? `: ${quantized.join(', ')} dequantized at load exactly as ggml dequantizes them (not kept quantized: memory is 4 bytes per weight)` : ''}`,
    ...(shape.fileContextLength > shape.contextLength ? [`GGUF context: the file says ${shape.fileContextLength} positions, served ${shape.contextLength}`] : []),
    `GGUF tokenizer: ${model.tokenizer.description}`,
  ];
}
