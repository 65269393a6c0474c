/**
 * A GGUF file as this project's model folder contents: config.json, generation_config.json,
 * tokenizer.json, tokenizer_config.json and the decoder graph the converter builds
 * (src/graph/llama-onnx-graph.ts) from the file's weights, dequantized exactly as
 * ggml does. Runtime-neutral: the caller provides the file's bytes through a ByteSource
 * and decides where the graph's weights go (external data under Node).
 */
import { buildLlamaGraph, EXTRA_OPSETS, type GraphOps } from '../graph/llama-onnx-graph.js';
import { encodeOnnxModel, ONNX_IR_VERSION, ONNX_OPSET, type OnnxGraph } from '../graph/onnx-writer.js';
import { readGguf, type ByteSource, type GgufFile } from './gguf-file.js';
import { ggufTokenizerFiles, type GgufTokenizerFiles } from './gguf-tokenizer.js';
import { refuseEmbeddingGguf, refuseEncoderGguf } from './embedding-gguf.js';
import { architectureOf, llamaShapeOf, readLlamaCheckpoint, type GgufLlamaShape } from './llama-checkpoint.js';
import { buildGemma2Graph } from '../graph/gemma2-graph.js';
import { GEMMA2, gemma2ConfigFields, gemma2ReportLines, gemma2ShapeOf, isGemma2Shape, readGemma2Checkpoint } from './architectures/gemma2.js';
import { GEMMA3, gemma3ConfigFields, gemma3ReportLines, gemma3ShapeOf, isGemma3Shape, readGemma3Checkpoint } from './architectures/gemma3.js';
import { keepWeightsQuantized, type GgufAccuracyLevel } from './quantized-weights.js';

/** Bumped whenever the folder made from the same file would differ (the Node cache keys on it). */
export const GGUF_CONVERSION_VERSION = 3;

/**
 * How the file's quantized weights are executed: `quantized` (default) keeps them as
 * MatMulNBits / GatherBlockQuantized over the file's integers (quantized-weights.ts);
 * `float32` dequantizes every weight (4 bytes a weight, the reference the other is tested against).
 */
export type GgufWeights = 'quantized' | 'float32';
export const GGUF_WEIGHT_MODES: readonly GgufWeights[] = ['quantized', 'float32'];

export interface GgufGraphOptions {
  weights: GgufWeights;
  /** MatMulNBits accuracy_level (quantized weights): 0 float32 activations (default), 4 int8 activations as llama.cpp. */
  accuracyLevel: GgufAccuracyLevel;
}

export const DEFAULT_GGUF_GRAPH_OPTIONS: GgufGraphOptions = { weights: 'quantized', accuracyLevel: 0 };

/** GGUF_WEIGHTS (quantized | float32) and GGUF_ACCURACY_LEVEL (0 | 1 | 4) from a home's settings (Node's environment, a Worker's vars). */
export function ggufGraphOptionsFromSettings(settings: { GGUF_WEIGHTS?: unknown; GGUF_ACCURACY_LEVEL?: unknown }): GgufGraphOptions {
  const weights = (settings.GGUF_WEIGHTS ?? DEFAULT_GGUF_GRAPH_OPTIONS.weights) as GgufWeights;
  if (!GGUF_WEIGHT_MODES.includes(weights)) throw new Error(`GGUF_WEIGHTS must be one of ${GGUF_WEIGHT_MODES.join(', ')}, got "${String(settings.GGUF_WEIGHTS)}"`);
  const level = Number(settings.GGUF_ACCURACY_LEVEL ?? DEFAULT_GGUF_GRAPH_OPTIONS.accuracyLevel);
  if (![0, 1, 4].includes(level)) throw new Error(`GGUF_ACCURACY_LEVEL must be 0, 1 or 4, got "${String(settings.GGUF_ACCURACY_LEVEL)}"`);
  return { weights, accuracyLevel: level as GgufAccuracyLevel };
}

export interface GgufModel {
  file: GgufFile;
  shape: GgufLlamaShape;
  tokenizer: GgufTokenizerFiles;
  config: Record<string, unknown>;
  generationConfig: Record<string, unknown>;
}

/** config.json's architectures entry (transformers' class) for each GGUF architecture. */
const HF_ARCHITECTURES: Record<string, string> = { llama: 'LlamaForCausalLM', qwen2: 'Qwen2ForCausalLM', qwen2moe: 'Qwen2MoeForCausalLM', qwen3: 'Qwen3ForCausalLM', qwen3moe: 'Qwen3MoeForCausalLM', phi3: 'Phi3ForCausalLM' };

/** Reads the header and checks everything the graph needs, before any weight is read. */
/**
 * `embedding`: open a decoder whose header sets a pooling type for embeddings
 * (embeddings/gguf-embedding.ts); without it such a file is refused, as is every encoder.
 */
export async function openGgufModel(source: ByteSource, options: { embedding?: boolean } = {}): Promise<GgufModel> {
  const file = await readGguf(source);
  if (options.embedding) refuseEncoderGguf(file);
  else refuseEmbeddingGguf(file);
  const architecture = architectureOf(file);
  const shape = architecture === GEMMA2 ? gemma2ShapeOf(file) : architecture === GEMMA3 ? gemma3ShapeOf(file) : llamaShapeOf(file);
  const tokenizer = ggufTokenizerFiles(file, shape.contextLength);
  const tokens = (file.metadata.get('tokenizer.ggml.tokens') as string[]).length;
  if (tokens !== shape.vocabSize) {
    // llama.cpp pads some embeddings past the vocabulary; ids past it are simply never produced by the tokenizer.
    if (tokens > shape.vocabSize) throw new Error(`the tokenizer has ${tokens} tokens, the embedding only ${shape.vocabSize} rows`);
  }
  const config = {
    architectures: [HF_ARCHITECTURES[shape.architecture] ?? 'LlamaForCausalLM'],
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
    ...(isGemma2Shape(shape) ? gemma2ConfigFields(shape) : {}),
    ...(isGemma3Shape(shape) ? gemma3ConfigFields(shape) : {}),
    ...(shape.moe ? { num_experts: shape.moe.count, num_experts_per_tok: shape.moe.used, moe_intermediate_size: shape.moe.hidden, norm_topk_prob: shape.moe.normalize } : {}),
    ...(shape.moe?.sharedHidden ? { shared_expert_intermediate_size: shape.moe.sharedHidden } : {}),
  };
  const generationConfig = { bos_token_id: tokenizer.bosTokenId ?? null, eos_token_id: tokenizer.eosTokenIds };
  return { file, shape, tokenizer, config, generationConfig };
}

/** ggml types whose blocks have a float min (element = scale * q - min). */
const MIN_TYPES = new Set(['Q4_1', 'Q5_1', 'Q2_K', 'Q4_K', 'Q5_K']);

function hasMinTypes(model: GgufModel): boolean {
  return model.file.tensors.some((tensor) => MIN_TYPES.has(tensor.type!.name));
}

/** How many times buildGgufGraph reads the file's tensors: values, then scales (and minimums) for the quantized form. */
export function ggufGraphPasses(model: GgufModel, options: GgufGraphOptions): number {
  return options.weights === 'float32' ? 1 : hasMinTypes(model) ? 3 : 2;
}

/** The graph weights each GGUF matrix feeds (the converter's initializer names), for the report. */
export function sourcesOf(graphWeight: string): string[] {
  const layer = /^model\.layers\.(\d+)\.(self_attn\.qkv_proj|self_attn\.o_proj|mlp\.gate_up_proj|mlp\.down_proj)\.weight$/.exec(graphWeight);
  if (layer) {
    const p = `blk.${layer[1]}.`;
    // attn_qkv: phi3's fused q/k/v; a file has it or the three parts (and ffn_gate or not).
    return { 'self_attn.qkv_proj': ['attn_q', 'attn_k', 'attn_v', 'attn_qkv'], 'self_attn.o_proj': ['attn_output'], 'mlp.gate_up_proj': ['ffn_gate', 'ffn_up'], 'mlp.down_proj': ['ffn_down'] }[layer[2]]!.map((part) => `${p}${part}.weight`);
  }
  return graphWeight === 'model.embed_tokens.weight' ? ['token_embd.weight'] : graphWeight === 'lm_head.weight' ? ['output.weight'] : [];
}

/** "type: how" lines for the startup report: each ggml type the file holds and how its tensors are executed. */
function executionLines(model: GgufModel, weights: ReadonlyMap<string, string> | null): string[] {
  const how = new Map<string, Set<string>>();
  const typeOf = new Map(model.file.tensors.map((t) => [t.name, t.type!.name]));
  const add = (type: string, form: string) => how.set(type, (how.get(type) ?? new Set()).add(form));
  const matrices = new Set<string>();
  for (const [graphWeight, form] of weights ?? []) {
    for (const source of sourcesOf(graphWeight).filter((name) => typeOf.has(name))) {
      matrices.add(source);
      add(typeOf.get(source)!, form.startsWith('float32') ? form : `MatMulNBits/GatherBlockQuantized, ${form}`);
    }
  }
  for (const tensor of model.file.tensors) {
    if (matrices.has(tensor.name)) continue;
    const isMatrix = tensor.dims.length === 2;
    // 3-D: a mixture's experts, which onnxruntime's MoE kernel takes as float weights.
    const form = tensor.dims.length === 3 ? 'float32 (experts, in the MoE kernel)' : isMatrix ? (weights ? 'float32 (not a quantizable projection)' : 'float32, dequantized at load exactly as ggml does') : 'float32 (norms, biases, rope factors)';
    add(tensor.type!.name, form);
  }
  return [...how].map(([type, forms]) => `GGUF ${type} ×${model.shape.tensorTypes.get(type) ?? 0}: ${[...forms].join('; ')}`);
}

/** The decoder graph in flavour `ops`, weights inline (the caller may move them out), and its execution report lines. */
export async function buildGgufGraph(model: GgufModel, ops: GraphOps, options: GgufGraphOptions = DEFAULT_GGUF_GRAPH_OPTIONS): Promise<{ graph: OnnxGraph; execution: string[]; weights: ReadonlyMap<string, string> }> {
  const { shape } = model;
  const build = async (projection: 'values' | 'scales' | 'mins') =>
    isGemma2Shape(shape)
      ? buildGemma2Graph(await readGemma2Checkpoint(model.file, shape, projection), shape.rmsNormEps, ops)
      : isGemma3Shape(shape)
        ? buildGemma2Graph(await readGemma3Checkpoint(model.file, shape, projection), shape.rmsNormEps, ops)
        : buildLlamaGraph(await readLlamaCheckpoint(model.file, shape, projection), { rmsNormEps: shape.rmsNormEps, ops });
  const values = await build('values');
  if (options.weights === 'float32') return { graph: values, execution: executionLines(model, null), weights: new Map() };
  const hasMins = hasMinTypes(model);
  const { graph, report } = await keepWeightsQuantized(values, () => build('scales'), hasMins ? () => build('mins') : null, options.accuracyLevel);
  return { graph, execution: executionLines(model, report.weights), weights: report.weights };
}

export function encodeGgufGraph(graph: OnnxGraph, ops: GraphOps, model: GgufModel): Uint8Array {
  return encodeOnnxModel({
    extraOpsets: EXTRA_OPSETS[ops],
    irVersion: ONNX_IR_VERSION,
    opsetVersion: ONNX_OPSET,
    producerName: 'edge-llm gguf',
    producerVersion: String(GGUF_CONVERSION_VERSION),
    docString: `${model.shape.architecture} decoder built from the GGUF "${model.shape.name ?? 'unnamed'}".`,
    graph,
  });
}

function ropeScalingText({ ropeScaling, ropeAttentionFactor, contextLength }: GgufLlamaShape): string {
  const factor = ropeAttentionFactor === 1 ? '' : `, attention factor ${Number(ropeAttentionFactor.toPrecision(6))}`;
  if (ropeScaling.kind === 'longrope') {
    const why = ropeScaling.factors === 'long' ? `context ${contextLength} > original ${ropeScaling.originalContext}` : `context ${contextLength} <= original ${ropeScaling.originalContext}`;
    return `, rope scaling longrope (${ropeScaling.factors} factors: ${why}, as llama.cpp chooses per context)${factor}`;
  }
  return `${ropeScaling.kind === 'none' ? '' : `, rope scaling ${ropeScaling.kind}`}${factor}`;
}

function expertsText({ moe }: GgufModel['shape']): string {
  if (!moe) return '';
  return `, ${moe.count} experts of width ${moe.hidden} (top ${moe.used}, ${moe.normalize ? 'renormalised' : 'not renormalised'})${moe.sharedHidden ? `, a shared expert of width ${moe.sharedHidden}` : ''}`;
}

/** The startup report's lines: architecture, tensor types and how each is executed. */
export function ggufReportLines(model: GgufModel): string[] {
  const { shape } = model;
  const types = [...shape.tensorTypes.entries()].map(([type, count]) => `${type} ×${count}`).join(', ');
  return [
    `GGUF: architecture ${shape.architecture}${shape.name ? ` ("${shape.name}")` : ''}, ${shape.nLayers} layers, ${shape.nHeads} heads / ${shape.nKvHeads} key-value heads${shape.headDim * shape.nHeads === shape.dim ? '' : `, head size ${shape.headDim}`}${shape.qkNorm ? ', per-head q/k norms' : ''}${expertsText(shape)}, rope theta ${shape.ropeTheta}${ropeScalingText(shape)}, ${shape.tiedEmbeddings ? 'tied' : 'untied'} output head`,
    `GGUF tensors: ${types}`,
    ...(shape.fileContextLength > shape.contextLength ? [`GGUF context: the file says ${shape.fileContextLength} positions, served ${shape.contextLength}`] : []),
    ...(isGemma2Shape(shape) ? gemma2ReportLines(shape) : []),
    ...(isGemma3Shape(shape) ? gemma3ReportLines(shape) : []),
    `GGUF tokenizer: ${model.tokenizer.description}`,
  ];
}

/** Initializers at least this large go to external data (smaller ones stay in the graph). */
export const EXTERNAL_DATA_MIN_BYTES = 1024;

/**
 * Where each large initializer goes in one external data file named `location` (64-byte
 * aligned): the graph refers to the file, and `pieces` say which bytes go at which offset.
 * Node writes the pieces into a file beside the graph; a page copies them into the one
 * buffer onnxruntime-web takes as `externalData` (its protobuf parser caps a graph at 2 GB).
 */
export function externalDataLayout(graph: OnnxGraph, location: string): { graph: OnnxGraph; pieces: Array<{ offset: number; bytes: Uint8Array }>; size: number } {
  const pieces: Array<{ offset: number; bytes: Uint8Array }> = [];
  let size = 0;
  const initializers = graph.initializers.map((tensor) => {
    if (tensor.rawData.byteLength < EXTERNAL_DATA_MIN_BYTES) return tensor;
    size += (64 - (size % 64)) % 64;
    pieces.push({ offset: size, bytes: tensor.rawData });
    const external = { location, offset: size, length: tensor.rawData.byteLength };
    size += tensor.rawData.byteLength;
    return { ...tensor, rawData: new Uint8Array(0), external };
  });
  return { graph: { ...graph, initializers }, pieces, size };
}
