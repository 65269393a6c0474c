/**
 * The converter's `--dtype`: how the projection weights are stored, as onnx-community's
 * exports name their variants (onnx/model.onnx, model_fp16.onnx, model_q4.onnx).
 * - `fp32`: float MatMul weights (the graph as built).
 * - `fp16`: float16 weight initializers (half the file), each read through a Cast to float,
 *   so activations, KV cache and logits stay float32 and every runtime runs the graph
 *   (onnxruntime's CPU provider folds the Casts at load: it computes in float32). Flavours
 *   that pre-scale q by 1/sqrt(head_dim) round those rows to float16 once more.
 * - `q4`: every MatMul on a weight whose input size is a multiple of 32, the tied output
 *   projection included, becomes com.microsoft MatMulNBits (bits 4, block_size 32, no zero
 *   points: its default 8), with llama.cpp's Q4_0 blocks (q4-blocks.ts), at accuracy level 4
 *   by default (int8 activations, as llama.cpp's Q4_0 x Q8_0 kernels: 1.3-1.9x faster decode
 *   on the 135M-shaped model under onnxruntime-node, and its greedy ids agree with llama.cpp's
 *   as often as level 0's do). The embedding lookup reads the same blocks through
 *   GatherBlockQuantized (`q4Embedding`): -110 MB of file and ~-95 MiB of RSS there.
 *
 * A checkpoint's weights are first moved onto the dtype's grid (`checkpointOnWeightGrid`),
 * so the graph means what a Q4_0 (or F16) GGUF of the same checkpoint means; the graph's own
 * re-layouts keep that grid, and the pass below re-quantizes it without loss.
 */
import { float16ToFloat32, float32ToFloat16 } from '../onnx/float16.js';
import type { DecoderCheckpoint, DecoderLayer } from './decoder-checkpoint.js';
import { OnnxDataType, type OnnxGraph, type OnnxNode, type OnnxTensor } from './onnx-writer.js';
import { packForMatMulNBits, Q4_BLOCK, quantizeQ4Rows, snapToQ4 } from './q4-blocks.js';
import { transpose } from './llama-weights.js';
import { MS_DOMAIN } from './llama-graph-blocks.js';

export type WeightDtype = 'fp32' | 'fp16' | 'q4';
export const WEIGHT_DTYPES: readonly WeightDtype[] = ['fp32', 'fp16', 'q4'];

/** The graph file of each dtype, in transformers.js' naming. */
export const ONNX_FILE_OF_DTYPE: Record<WeightDtype, string> = {
  fp32: 'onnx/model.onnx',
  fp16: 'onnx/model_fp16.onnx',
  q4: 'onnx/model_q4.onnx',
};

export type Q4AccuracyLevel = 0 | 1 | 2 | 3 | 4;
export const DEFAULT_Q4_ACCURACY_LEVEL: Q4AccuracyLevel = 4;

export interface WeightDtypeOptions {
  /**
   * MatMulNBits accuracy_level, the least precise arithmetic onnxruntime may use: 0 (unset),
   * 1 float32, 2 float16, 3 bfloat16 (x86's CPU provider computes these four in float32);
   * 4 quantizes activations to int8 per block of 32 (as llama.cpp's Q4_0 x Q8_0 dot product).
   */
  q4AccuracyLevel?: Q4AccuracyLevel;
  /**
   * The token embedding of a q4 graph: `blocks` (default) looks rows up with
   * GatherBlockQuantized in the same Q4_0 blocks (with tied embeddings, the very initializer
   * the output projection's MatMulNBits reads); `float` keeps a float32 table of those values.
   */
  q4Embedding?: 'blocks' | 'float';
}

function snapFloat16(values: Float32Array): Float32Array {
  return float16ToFloat32(float32ToFloat16(values));
}

/**
 * The checkpoint with its matrices replaced by the values the dtype stores: Q4_0's grid for
 * q4 (matrices whose rows are not a whole number of blocks stay float32, as in the graph),
 * float16's for fp16. Norm weights and RoPE tables are never quantized.
 */
export function checkpointOnWeightGrid(ckpt: DecoderCheckpoint, dtype: WeightDtype): DecoderCheckpoint {
  if (dtype === 'fp32') return ckpt;
  const snap = (w: Float32Array, rows: number, cols: number) =>
    dtype === 'fp16' ? snapFloat16(w) : cols % Q4_BLOCK === 0 ? snapToQ4(w, rows, cols) : w;
  const { dim, hiddenDim, vocabSize, sharedClassifier } = ckpt.header;
  const { kvDim } = ckpt;
  const layers: DecoderLayer[] = ckpt.layers.map((layer) => ({
    ...layer,
    wq: snap(layer.wq, dim, dim),
    wk: snap(layer.wk, kvDim, dim),
    wv: snap(layer.wv, kvDim, dim),
    wo: snap(layer.wo, dim, dim),
    w1: snap(layer.w1, hiddenDim, dim),
    w2: snap(layer.w2, dim, hiddenDim),
    w3: snap(layer.w3, hiddenDim, dim),
  }));
  const tokenEmbedding = snap(ckpt.tokenEmbedding, vocabSize, dim);
  const classifier = sharedClassifier ? tokenEmbedding : snap(ckpt.classifier, vocabSize, dim);
  return { ...ckpt, layers, tokenEmbedding, classifier };
}

function floatsOf(tensor: OnnxTensor): Float32Array {
  const bytes = tensor.rawData;
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Float32Array(copy.buffer);
}

const isFloatMatrix = (tensor: OnnxTensor | undefined): tensor is OnnxTensor =>
  tensor !== undefined && tensor.dataType === OnnxDataType.FLOAT && tensor.dims.length === 2 && !tensor.external;

/** Rewrites the graph's weight storage to `dtype` (see the file comment). */
export function applyWeightDtype(graph: OnnxGraph, dtype: WeightDtype, options: WeightDtypeOptions = {}): OnnxGraph {
  if (dtype === 'fp32') return graph;
  return dtype === 'fp16' ? toFloat16Weights(graph) : toQ4Weights(graph, options);
}

function consumersOf(nodes: readonly OnnxNode[], value: string): OnnxNode[] {
  return nodes.filter((node) => node.inputs.includes(value));
}

function toFloat16Weights(graph: OnnxGraph): OnnxGraph {
  const casts: OnnxNode[] = [];
  const renamed = new Map<string, string>();
  const initializers = graph.initializers.map((tensor) => {
    if (!isFloatMatrix(tensor)) return tensor;
    // Weights only: matrices read by MatMul, a Gather (embedding) or a Transpose (tied head).
    const readers = consumersOf(graph.nodes, tensor.name);
    const weightUse = (node: OnnxNode) =>
      (node.opType === 'MatMul' && node.inputs[1] === tensor.name) ||
      (node.opType === 'Gather' && node.inputs[0] === tensor.name) ||
      node.opType === 'Transpose';
    if (readers.length === 0 || !readers.every(weightUse)) return tensor;
    const bits = float32ToFloat16(floatsOf(tensor));
    const asFloat = `${tensor.name}/float32`;
    casts.push({
      opType: 'Cast',
      name: `/weights/${tensor.name}/Cast`,
      inputs: [tensor.name],
      outputs: [asFloat],
      attributes: [{ name: 'to', value: OnnxDataType.FLOAT }],
    });
    renamed.set(tensor.name, asFloat);
    return { ...tensor, dataType: OnnxDataType.FLOAT16, rawData: new Uint8Array(bits.buffer) };
  });
  const nodes = graph.nodes.map((node) =>
    node.inputs.some((input) => renamed.has(input)) ? { ...node, inputs: node.inputs.map((input) => renamed.get(input) ?? input) } : node,
  );
  return { ...graph, initializers, nodes: [...casts, ...nodes] };
}

/** A matrix's Q4 blocks, stored once: MatMulNBits' B and the embedding's GatherBlockQuantized data. */
interface StoredBlocks {
  qweight: string;
  scales: Float32Array;
  base: string;
  /** [rows, cols] of the quantized matrix: rows are the blocks' rows (output features, or vocabulary). */
  rows: number;
  cols: number;
}

function toQ4Weights(graph: OnnxGraph, options: WeightDtypeOptions): OnnxGraph {
  const accuracyLevel = options.q4AccuracyLevel ?? DEFAULT_Q4_ACCURACY_LEVEL;
  const byName = new Map(graph.initializers.map((tensor) => [tensor.name, tensor]));
  const producerOf = new Map<string, OnnxNode>();
  for (const node of graph.nodes) for (const output of node.outputs) producerOf.set(output, node);
  const added: OnnxTensor[] = [];
  const dropped = new Set<OnnxNode>();
  const replaced = new Map<OnnxNode, OnnxNode[]>();
  const stored = new Map<string, StoredBlocks>();

  // [rows, cols] row-major weights -> packed blocks, once per source (a tied head and the embedding share them).
  const blocksOf = (source: string, rows: Float32Array, n: number, k: number): StoredBlocks => {
    const known = stored.get(source);
    if (known) return known;
    // The grid is already Q4_0's (checkpointOnWeightGrid), possibly scaled: keep float32 scales.
    const blocks = quantizeQ4Rows(rows, n, k, { float16Scales: false });
    const base = `${source}.MatMulNBits`;
    const qweight = `${base}.qweight`;
    added.push({ name: qweight, dataType: OnnxDataType.UINT8, dims: [n, k / Q4_BLOCK, Q4_BLOCK / 2], rawData: packForMatMulNBits(blocks) });
    const entry = { qweight, scales: blocks.scales, base, rows: n, cols: k };
    stored.set(source, entry);
    return entry;
  };

  for (const node of graph.nodes) {
    if (node.opType !== 'MatMul' || node.domain) continue;
    const weightName = node.inputs[1];
    // [out, in] rows: a MatMul weight is [in, out]; a tied head reads Transpose([vocab, dim]).
    let rows: Float32Array;
    let n: number;
    let k: number;
    let source: string;
    const direct = byName.get(weightName);
    const transposeNode = producerOf.get(weightName);
    if (isFloatMatrix(direct)) {
      [k, n] = direct.dims;
      if (k % Q4_BLOCK !== 0) continue;
      rows = transpose(floatsOf(direct), k, n);
      source = direct.name;
    } else if (transposeNode?.opType === 'Transpose' && isFloatMatrix(byName.get(transposeNode.inputs[0]))) {
      const perm = transposeNode.attributes?.find((a) => a.name === 'perm')?.value;
      if (perm !== undefined && !(Array.isArray(perm) && perm[0] === 1 && perm[1] === 0)) continue;
      const tensor = byName.get(transposeNode.inputs[0])!;
      [n, k] = tensor.dims;
      if (k % Q4_BLOCK !== 0) continue;
      rows = floatsOf(tensor);
      source = tensor.name;
      if (consumersOf(graph.nodes, weightName).length === 1) dropped.add(transposeNode);
    } else {
      continue;
    }
    const blocks = blocksOf(source, rows, n, k);
    const scales = `${blocks.base}.scales`;
    added.push({ name: scales, dataType: OnnxDataType.FLOAT, dims: [n * (k / Q4_BLOCK)], rawData: new Uint8Array(blocks.scales.buffer) });
    replaced.set(node, [
      {
        opType: 'MatMulNBits',
        domain: MS_DOMAIN,
        name: node.name.replace(/MatMul$/, 'MatMulNBits'),
        inputs: [node.inputs[0], blocks.qweight, scales],
        outputs: node.outputs,
        attributes: [
          { name: 'K', value: k },
          { name: 'N', value: n },
          { name: 'bits', value: 4 },
          { name: 'block_size', value: Q4_BLOCK },
          { name: 'accuracy_level', value: accuracyLevel },
        ],
      },
    ]);
  }

  if ((options.q4Embedding ?? 'blocks') === 'blocks') {
    for (const node of graph.nodes) {
      const embedding = quantizableEmbedding(graph, node, byName);
      if (!embedding) continue;
      const [rowsCount, k] = embedding.dims;
      const blocks = blocksOf(embedding.name, floatsOf(embedding), rowsCount, k);
      replaced.set(node, blockQuantizedGather(node, blocks, (name, dataType, dims, rawData) => added.push({ name, dataType, dims, rawData })));
    }
  }

  const nodes = graph.nodes.filter((node) => !dropped.has(node)).flatMap((node) => replaced.get(node) ?? [node]);
  const stillRead = new Set(nodes.flatMap((node) => node.inputs));
  const initializers = [...graph.initializers.filter((tensor) => stillRead.has(tensor.name)), ...added];
  return { ...graph, nodes, initializers };
}

/** An embedding lookup: Gather on axis 0 of a float [vocab, dim] initializer, dim a whole number of blocks, rank-2 ids. */
function quantizableEmbedding(graph: OnnxGraph, node: OnnxNode, byName: Map<string, OnnxTensor>): OnnxTensor | undefined {
  if (node.opType !== 'Gather' || node.domain) return undefined;
  const axis = node.attributes?.find((a) => a.name === 'axis')?.value ?? 0;
  const table = byName.get(node.inputs[0]);
  const ids = graph.inputs.find((input) => input.name === node.inputs[1]);
  if (Number(axis) !== 0 || !isFloatMatrix(table) || table.dims[1] % Q4_BLOCK !== 0 || ids?.shape.length !== 2) return undefined;
  return table;
}

/**
 * com.microsoft GatherBlockQuantized over MatMulNBits' own B layout [vocab, dim / 32, 16]
 * (uint8, two 4-bit values a byte, default zero point 8, quantize_axis 2: one block per
 * [row, block] slice), so a tied head and the embedding read one initializer. Its scales
 * must have B's rank: [vocab, dim / 32, 1], the same floats as MatMulNBits' scales. The
 * rows come out [B, S, dim / 32, 32]; a Reshape makes them [B, S, dim].
 */
function blockQuantizedGather(
  node: OnnxNode,
  blocks: StoredBlocks,
  addInitializer: (name: string, dataType: OnnxDataType, dims: readonly number[], rawData: Uint8Array) => void,
): OnnxNode[] {
  const { rows, cols, base, qweight } = blocks;
  const scales = `${base}.gather_scales`;
  const shape = `${base}.gather_row_shape`;
  addInitializer(scales, OnnxDataType.FLOAT, [rows, cols / Q4_BLOCK, 1], new Uint8Array(blocks.scales.buffer));
  addInitializer(shape, OnnxDataType.INT64, [3], new Uint8Array(BigInt64Array.of(0n, 0n, BigInt(cols)).buffer));
  const blockRows = `${node.outputs[0]}/blocks`;
  return [
    {
      opType: 'GatherBlockQuantized',
      domain: MS_DOMAIN,
      name: `${node.name}BlockQuantized`,
      inputs: [qweight, node.inputs[1], scales],
      outputs: [blockRows],
      attributes: [
        { name: 'gather_axis', value: 0 },
        { name: 'quantize_axis', value: 2 },
        { name: 'block_size', value: Q4_BLOCK },
        { name: 'bits', value: 4 },
      ],
    },
    { opType: 'Reshape', name: `${node.name}/Reshape`, inputs: [blockRows, shape], outputs: node.outputs },
  ];
}
