/**
 * A GGUF's quantized weights kept quantized in the graph: each MatMul weight (and the
 * embedding Gather) whose values are ggml blocks becomes com.microsoft MatMulNBits
 * (GatherBlockQuantized for the embedding) over the file's own integers and scales.
 *
 * Every quantized ggml type is element = scale * t - min per block (ggml-types.ts BlockForm).
 * MatMulNBits computes x · ((c - z) * scale) with c a 4- or 8-bit code and z an integer
 * zero point per block, so it holds `scale * t` exactly (c = t + z); a float min cannot be
 * a zero point (z = min / scale is not an integer in general). The min is subtracted
 * exactly the way llama.cpp's K-quant dot products do it: x · W = MatMulNBits(x) - (block
 * sums of x) · mins, the block sums from a Reshape + ReduceSum and one small MatMul with the
 * [blocks, N] mins (1 float per block of 32 weights).
 *
 * The graph builder re-lays weights (row permutations, concatenation of q/k/v and gate/up,
 * q pre-scaled by 1/sqrt(head_dim), transposes). Rather than re-deriving that here, the
 * graph is built three times: from the dequantized values, from each element's block scale
 * and from its block min (llama-checkpoint.ts CheckpointProjection). Each built weight's
 * scale and min graphs then give, element by element, the factors its values were made
 * with, and t = (value + min) / scale is an integer: checked for every element (the value
 * rebuilt from t within float rounding), else the weight stays float32 and the report says why.
 * A weight whose blocks mix types (Q4_K_M's q/k Q4_K beside v Q6_K) gets one common form: the
 * smallest block (16 if any row is Q6_K) and the widest codes (8 bits if any block needs them).
 */
import { MS_DOMAIN } from '../graph/llama-graph-blocks.js';
import { transpose } from '../graph/llama-weights.js';
import { OnnxDataType, type OnnxGraph, type OnnxNode, type OnnxTensor } from '../graph/onnx-writer.js';

/** MatMulNBits accuracy_level: 0 keeps float32 activations (the exact claim); 4 quantizes them to int8 as llama.cpp does. */
export type GgufAccuracyLevel = 0 | 1 | 4;

interface Codes {
  rows: number;
  cols: number;
  blockSize: number;
  bits: 4 | 8;
  /** [rows, cols] codes c, value = (c - z) * scale - min. */
  codes: Uint8Array;
  /** [rows, blocks] zero points, and whether all are MatMulNBits' default 2^(bits-1). */
  zeroPoints: Uint8Array;
  defaultZeroPoints: boolean;
  scales: Float32Array;
  /** [rows, blocks] mins, null when all are 0. */
  mins: Float32Array | null;
}

type Quantization = { codes: Codes } | { reason: string };

/** One value per `size` elements of each row, or null when a block's elements differ. */
function perBlock(values: Float32Array, rows: number, cols: number, size: number): Float32Array | null {
  if (cols % size !== 0) return null;
  const out = new Float32Array((rows * cols) / size);
  for (let block = 0; block < out.length; block++) {
    const at = block * size;
    const first = values[at];
    for (let j = 1; j < size; j++) if (values[at + j] !== first) return null;
    out[block] = first;
  }
  return out;
}

/** Every other block of 16: the factors of blocks of 32 that are whole. */
const halve = (per16: Float32Array) => per16.filter((_, i) => i % 2 === 0);

const FLOAT32_EPSILON = 2 ** -23;

/**
 * The codes of [rows, cols] row-major values whose elements are scale * t - min, with one
 * scale and min per `blockSize` elements of a row (see the file comment).
 */
export function quantizeRows(values: Float32Array, scales: Float32Array, mins: Float32Array, rows: number, cols: number, blockSize: number): Quantization {
  const t = new Int32Array(rows * cols);
  const blocks = scales.length;
  const low = new Int32Array(blocks).fill(2 ** 30);
  const high = new Int32Array(blocks).fill(-(2 ** 30));
  for (let i = 0; i < values.length; i++) {
    const block = Math.floor(i / blockSize);
    const s = scales[block];
    const m = mins[block];
    const k = s === 0 ? 0 : Math.round((values[i] + m) / s);
    const rebuilt = Math.fround(Math.fround(s * k) - m);
    if (Math.abs(rebuilt - values[i]) > 4 * FLOAT32_EPSILON * (Math.abs(s * k) + Math.abs(m))) {
      return { reason: `element ${i} is not scale * t - min of its block (${values[i]} vs ${rebuilt})` };
    }
    t[i] = k;
    low[block] = Math.min(low[block], k);
    high[block] = Math.max(high[block], k);
  }
  const fits = (bits: number, block: number) => {
    const half = 2 ** (bits - 1);
    return (low[block] >= -half && high[block] < half) || (low[block] >= 0 && high[block] < 2 * half);
  };
  const bits = ([4, 8] as const).find((b) => low.every((_, block) => fits(b, block)));
  if (bits === undefined) return { reason: 'integers wider than 8 bits' };
  const half = 2 ** (bits - 1);
  const zeroPoints = new Uint8Array(blocks).map((_, block) => (low[block] >= -half && high[block] < half ? half : 0));
  const codes = new Uint8Array(rows * cols).map((_, i) => t[i] + zeroPoints[Math.floor(i / blockSize)]);
  return {
    codes: {
      rows,
      cols,
      blockSize,
      bits,
      codes,
      zeroPoints,
      defaultZeroPoints: zeroPoints.every((z) => z === half),
      scales,
      mins: mins.some((m) => m !== 0) ? mins : null,
    },
  };
}

/** MatMulNBits' B (and GatherBlockQuantized's data): [rows, blocks, blockSize * bits / 8], 4-bit element 2i in the low nibble of byte i. */
function packCodes({ codes, bits }: Codes): Uint8Array {
  if (bits === 8) return codes;
  const out = new Uint8Array(codes.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = codes[2 * i] | (codes[2 * i + 1] << 4);
  return out;
}

/** MatMulNBits' zero points: 8-bit one a byte, 4-bit two a byte along each row's blocks. */
function packMatMulZeroPoints({ zeroPoints, bits, rows, cols, blockSize }: Codes): Uint8Array {
  if (bits === 8) return zeroPoints;
  const blocks = cols / blockSize;
  const perRow = Math.ceil(blocks / 2);
  const out = new Uint8Array(rows * perRow);
  for (let r = 0; r < rows; r++) for (let b = 0; b < blocks; b++) out[r * perRow + (b >> 1)] |= zeroPoints[r * blocks + b] << ((b & 1) * 4);
  return out;
}

const floatBytes = (values: Float32Array) => new Uint8Array(values.buffer, values.byteOffset, values.byteLength);

function floatsOf(tensor: OnnxTensor): Float32Array {
  const copy = new Uint8Array(tensor.rawData.byteLength);
  copy.set(tensor.rawData);
  return new Float32Array(copy.buffer);
}

const isFloatMatrix = (tensor: OnnxTensor | undefined): tensor is OnnxTensor =>
  tensor !== undefined && tensor.dataType === OnnxDataType.FLOAT && tensor.dims.length === 2 && !tensor.external;

export interface QuantizedWeightsReport {
  /** Graph weight (initializer) name → how it is executed. */
  weights: Map<string, string>;
}

export function describeCodes(codes: Codes): string {
  return `${codes.bits}-bit codes, block ${codes.blockSize}${codes.defaultZeroPoints ? '' : ', zero points per block'}${codes.mins ? ', mins subtracted through block sums' : ''}`;
}

/** A float matrix the graph reads as a weight: [rows, cols] rows are output features (or vocabulary). */
interface Site {
  rows: number;
  cols: number;
  /** The initializer is MatMul's [in, out]: transposed to rows. */
  transposed: boolean;
}

/** Each block of 16's scale (or min), and whether blocks of 32 are whole; or why the weight stays float. */
type Factors = { per16: Float32Array; whole32: boolean } | { reason: string };

function rowsOf(tensor: OnnxTensor, site: Site): Float32Array {
  const floats = floatsOf(tensor);
  return site.transposed ? transpose(floats, site.cols, site.rows) : floats;
}

/** One factor graph (scales or mins), reduced to per-block factors: the graph itself is not kept. */
function factorsOf(graph: OnnxGraph, sites: ReadonlyMap<string, Site>, kind: 'scales' | 'mins'): Map<string, Factors> {
  const byName = new Map(graph.initializers.map((tensor) => [tensor.name, tensor]));
  const out = new Map<string, Factors>();
  for (const [name, site] of sites) {
    const tensor = byName.get(name);
    if (!tensor) {
      out.set(name, { reason: `no block ${kind}` });
      continue;
    }
    const rows = rowsOf(tensor, site);
    if (kind === 'scales' && rows.some(Number.isNaN)) {
      out.set(name, { reason: 'float in the file' });
      continue;
    }
    const per16 = perBlock(rows, site.rows, site.cols, 16);
    out.set(name, per16 ? { per16, whole32: perBlock(rows, site.rows, site.cols, 32) !== null } : { reason: `${kind} blocks do not run whole along the input features` });
  }
  return out;
}

/**
 * The graph built from the dequantized values with its quantized weights replaced (see the
 * file comment). `buildScales` and `buildMins` build the same graph from the scale and min
 * projections, one after the other, each reduced to per-block factors before the next is
 * built; `buildMins` is null when no type in the file has mins (they are all 0).
 */
export async function keepWeightsQuantized(
  graph: OnnxGraph,
  buildScales: () => Promise<OnnxGraph>,
  buildMins: (() => Promise<OnnxGraph>) | null,
  accuracyLevel: GgufAccuracyLevel,
): Promise<{ graph: OnnxGraph; report: QuantizedWeightsReport }> {
  const byName = new Map(graph.initializers.map((tensor) => [tensor.name, tensor]));
  const producerOf = new Map<string, OnnxNode>();
  for (const node of graph.nodes) for (const output of node.outputs) producerOf.set(output, node);
  const consumers = (value: string) => graph.nodes.filter((node) => node.inputs.includes(value));

  // The weights: MatMul [in, out] initializers, a tied head's Transpose([vocab, dim]), the embedding Gather's table.
  const sites = new Map<string, Site>();
  const matMulSource = new Map<OnnxNode, string>();
  const gatherSource = new Map<OnnxNode, string>();
  for (const node of graph.nodes) {
    if (node.domain) continue;
    if (node.opType === 'MatMul') {
      const direct = byName.get(node.inputs[1]);
      const transposeNode = producerOf.get(node.inputs[1]);
      if (isFloatMatrix(direct)) {
        sites.set(direct.name, { rows: direct.dims[1], cols: direct.dims[0], transposed: true });
        matMulSource.set(node, direct.name);
      } else if (transposeNode?.opType === 'Transpose' && isFloatMatrix(byName.get(transposeNode.inputs[0]))) {
        const tensor = byName.get(transposeNode.inputs[0])!;
        sites.set(tensor.name, { rows: tensor.dims[0], cols: tensor.dims[1], transposed: false });
        matMulSource.set(node, tensor.name);
      }
    } else if (node.opType === 'Gather') {
      const table = byName.get(node.inputs[0]);
      const axis = Number(node.attributes?.find((a) => a.name === 'axis')?.value ?? 0);
      const ids = graph.inputs.find((input) => input.name === node.inputs[1]);
      if (axis === 0 && isFloatMatrix(table) && ids?.shape.length === 2) {
        sites.set(table.name, { rows: table.dims[0], cols: table.dims[1], transposed: false });
        gatherSource.set(node, table.name);
      }
    }
  }

  const scales = factorsOf(await buildScales(), sites, 'scales');
  const mins = buildMins ? factorsOf(await buildMins(), sites, 'mins') : null;

  const added: OnnxTensor[] = [];
  const addTensor = (name: string, dataType: OnnxDataType, dims: readonly number[], rawData: Uint8Array) => {
    added.push({ name, dataType, dims, rawData });
    return name;
  };
  const weights = new Map<string, string>();
  const stored = new Map<string, { codes: Codes; data: string }>();
  for (const [name, site] of sites) {
    const scale = scales.get(name)!;
    const min = mins?.get(name);
    const reason = 'reason' in scale ? scale.reason : min && 'reason' in min ? min.reason : undefined;
    if (reason !== undefined) {
      weights.set(name, `float32 (${reason})`);
      continue;
    }
    const scale16 = (scale as { per16: Float32Array; whole32: boolean });
    const min16 = min as { per16: Float32Array; whole32: boolean } | undefined;
    const whole32 = scale16.whole32 && (min16?.whole32 ?? true);
    const blockScales = whole32 ? halve(scale16.per16) : scale16.per16;
    const blockMins = min16 ? (whole32 ? halve(min16.per16) : min16.per16) : new Float32Array(blockScales.length);
    const result = quantizeRows(rowsOf(byName.get(name)!, site), blockScales, blockMins, site.rows, site.cols, whole32 ? 32 : 16);
    if ('reason' in result) {
      weights.set(name, `float32 (${result.reason})`);
      continue;
    }
    const { codes } = result;
    const data = addTensor(`${name}.quantized`, OnnxDataType.UINT8, [site.rows, site.cols / codes.blockSize, (codes.blockSize * codes.bits) / 8], packCodes(codes));
    stored.set(name, { codes, data });
    weights.set(name, describeCodes(codes));
  }

  const replaced = new Map<OnnxNode, OnnxNode[]>();
  const dropped = new Set<OnnxNode>();
  for (const [node, source] of matMulSource) {
    const entry = stored.get(source);
    if (!entry) continue;
    const transposeNode = producerOf.get(node.inputs[1]);
    if (transposeNode?.opType === 'Transpose' && consumers(node.inputs[1]).length === 1) dropped.add(transposeNode);
    replaced.set(node, matMulNBits(node, entry.codes, entry.data, accuracyLevel, addTensor));
  }
  for (const [node, source] of gatherSource) {
    const entry = stored.get(source);
    if (entry) replaced.set(node, blockGather(node, entry.codes, entry.data, addTensor));
  }

  const nodes = graph.nodes.filter((node) => !dropped.has(node)).flatMap((node) => replaced.get(node) ?? [node]);
  const stillRead = new Set(nodes.flatMap((node) => node.inputs));
  const initializers = [...graph.initializers.filter((tensor) => stillRead.has(tensor.name)), ...added];
  return { graph: { ...graph, nodes, initializers }, report: { weights } };
}

type AddTensor = (name: string, dataType: OnnxDataType, dims: readonly number[], rawData: Uint8Array) => string;

function matMulNBits(node: OnnxNode, codes: Codes, data: string, accuracyLevel: GgufAccuracyLevel, addTensor: AddTensor): OnnxNode[] {
  const { rows: n, cols: k, blockSize, bits } = codes;
  const blocks = k / blockSize;
  const base = `${node.name}/${data}`;
  const scales = addTensor(`${base}.scales`, OnnxDataType.FLOAT, [n * blocks], floatBytes(codes.scales));
  const zeroPoints = codes.defaultZeroPoints ? [] : [addTensor(`${base}.zero_points`, OnnxDataType.UINT8, [bits === 8 ? n * blocks : n * Math.ceil(blocks / 2)], packMatMulZeroPoints(codes))];
  const product = codes.mins ? `${node.outputs[0]}/scaled` : node.outputs[0];
  const nbits: OnnxNode = {
    opType: 'MatMulNBits',
    domain: MS_DOMAIN,
    name: `${node.name}NBits`,
    inputs: [node.inputs[0], data, scales, ...zeroPoints],
    outputs: [product],
    attributes: [
      { name: 'K', value: k },
      { name: 'N', value: n },
      { name: 'bits', value: bits },
      { name: 'block_size', value: blockSize },
      { name: 'accuracy_level', value: accuracyLevel },
    ],
  };
  if (!codes.mins) return [nbits];
  // x · (scale t - min) = MatMulNBits(x) - (x's block sums) · mins.
  const blockShape = addTensor(`${base}.block_shape`, OnnxDataType.INT64, [4], new Uint8Array(BigInt64Array.of(0n, 0n, BigInt(blocks), BigInt(blockSize)).buffer));
  const sumAxes = addTensor(`${base}.block_sum_axes`, OnnxDataType.INT64, [1], new Uint8Array(BigInt64Array.of(-1n).buffer));
  const minsT = addTensor(`${base}.mins`, OnnxDataType.FLOAT, [blocks, n], floatBytes(transpose(codes.mins, n, blocks)));
  const out = node.outputs[0];
  return [
    nbits,
    { opType: 'Reshape', name: `${node.name}/BlockReshape`, inputs: [node.inputs[0], blockShape], outputs: [`${out}/blocks`] },
    { opType: 'ReduceSum', name: `${node.name}/BlockSums`, inputs: [`${out}/blocks`, sumAxes], outputs: [`${out}/block_sums`], attributes: [{ name: 'keepdims', value: 0 }] },
    { opType: 'MatMul', name: `${node.name}/Mins`, inputs: [`${out}/block_sums`, minsT], outputs: [`${out}/mins`] },
    { opType: 'Sub', name: `${node.name}/SubMins`, inputs: [product, `${out}/mins`], outputs: [out] },
  ];
}

/**
 * The embedding lookup over the same codes (with tied embeddings the very initializer the
 * output projection reads): GatherBlockQuantized gives (c - z) * scale per [row, block],
 * [B, S, blocks, blockSize]; a Gather of the mins is subtracted (as ggml's dequantization
 * does: one float32 subtraction), and a Reshape makes the rows [B, S, dim].
 */
function blockGather(node: OnnxNode, codes: Codes, data: string, addTensor: AddTensor): OnnxNode[] {
  const { rows, cols, blockSize, bits } = codes;
  const blocks = cols / blockSize;
  const base = `${node.name}/${data}`;
  const scales = addTensor(`${base}.gather_scales`, OnnxDataType.FLOAT, [rows, blocks, 1], floatBytes(codes.scales));
  const zeroPoints = codes.defaultZeroPoints ? [] : [addTensor(`${base}.gather_zero_points`, OnnxDataType.UINT8, [rows, blocks, 1], codes.zeroPoints)];
  const rowShape = addTensor(`${base}.gather_row_shape`, OnnxDataType.INT64, [3], new Uint8Array(BigInt64Array.of(0n, 0n, BigInt(cols)).buffer));
  const out = node.outputs[0];
  const gathered: OnnxNode = {
    opType: 'GatherBlockQuantized',
    domain: MS_DOMAIN,
    name: `${node.name}BlockQuantized`,
    inputs: [data, node.inputs[1], scales, ...zeroPoints],
    outputs: [`${out}/blocks`],
    attributes: [
      { name: 'gather_axis', value: 0 },
      { name: 'quantize_axis', value: 2 },
      { name: 'block_size', value: blockSize },
      { name: 'bits', value: bits },
    ],
  };
  const reshape = (input: string): OnnxNode => ({ opType: 'Reshape', name: `${node.name}/Reshape`, inputs: [input, rowShape], outputs: [out] });
  if (!codes.mins) return [gathered, reshape(`${out}/blocks`)];
  const mins = addTensor(`${base}.gather_mins`, OnnxDataType.FLOAT, [rows, blocks, 1], floatBytes(codes.mins));
  return [
    gathered,
    { opType: 'Gather', name: `${node.name}/GatherMins`, inputs: [mins, node.inputs[1]], outputs: [`${out}/mins`], attributes: [{ name: 'axis', value: 0 }] },
    { opType: 'Sub', name: `${node.name}/SubMins`, inputs: [`${out}/blocks`, `${out}/mins`], outputs: [`${out}/dequantized`] },
    reshape(`${out}/dequantized`),
  ];
}
