/**
 * Adds multi-LoRA to a decoder graph (graph surgery on the serialized ONNX model), so that
 * rows of one batch each run with their own adapter, or none, in one model call.
 *
 * At each target projection y = MatMul(x, W) the graph gets
 *   y' = y + ((x · A_t) ⊙ mask) · B_t
 * where A_t [in, lanes·slots·R] and B_t [lanes·slots·R, out] are this projection's slices
 * of two packed inputs (`lora_a`, `lora_b`) holding every adapter slot's A and B (scale
 * folded into B, ranks padded to R with zeros), and `mask` [batch, 1, slots·R] is 1 on the
 * columns of the row's slot (all 0 for a base-model row), tiled once per lane count. This
 * is the gathered-per-row multi-LoRA of Punica / S-LoRA written with dense ops: the extra
 * work is one [in, slots·R] and one [slots·R, out] MatMul per projection, small next to
 * W's, and three inputs per call instead of two per projection (each input costs a fixed
 * few µs per call).
 *
 * Targets are MatMul nodes named as Optimum and this project's converter name them,
 * "/model/layers.N/<block>/<module>/MatMul", whose weight is a 2-D float32 initializer.
 * Graphs written by this project's graph builders (producer "edge-llm…") fuse projections;
 * their lanes are known: qkv_proj = q_proj (pre-scaled by 1/√head_dim) | k_proj | v_proj,
 * qk_proj = q_proj | k_proj, gate_up_proj = gate_proj | up_proj. Other layouts (quantized
 * MatMulNBits / MatMulInteger projections, projections inside If subgraphs, float16
 * weights) are refused by name.
 */
import type { ModelSpec } from '../onnx/model-spec.js';
import { bytesField, concat, readRecords, stringField, stringOf, varintField, type ProtoRecord } from './protobuf.js';

/** One adapter module's columns inside a target projection's output. */
export interface LoraLane {
  /** PEFT module name, e.g. "q_proj". */
  module: string;
  colStart: number;
  width: number;
  /** Folded into the graph's weight for this module (our converter pre-scales q). */
  scale: number;
}

export interface LoraTarget {
  layer: number;
  node: string;
  inDim: number;
  outDim: number;
  /** First row of this target's A in lora_a, first column of its B in lora_b. */
  aRow: number;
  bCol: number;
  lanes: LoraLane[];
}

/** Where every adapter module sits in the LoRA graph's packed inputs. */
export interface LoraGraphLayout {
  targets: LoraTarget[];
  /** Adapter slots per call (maxLoras) and the padded rank R (maxLoraRank). */
  slots: number;
  rank: number;
  /** Most lanes of any target: lora_a's columns and lora_b's rows are maxLanes·slots·R. */
  maxLanes: number;
  aRows: number;
  bCols: number;
  /** Module names present in each layer (for refusing adapters that target others). */
  modules: ReadonlySet<string>;
}

export const LORA_INPUTS = { a: 'lora_a', b: 'lora_b', mask: 'lora_mask' } as const;

const TARGET_NODE = /^\/model\/layers\.(\d+)\/[A-Za-z_]+\/([A-Za-z0-9_]+)\/MatMul$/;
const ONNX_FLOAT = 1;
const ONNX_INT64 = 7;

/** Fused projections of this project's converter, and how they split into PEFT modules. */
function fusedLanes(module: string, weightName: string, outDim: number, spec: ModelSpec): LoraLane[] | null {
  // The portable flavour's qkv_proj node also computes rotate_half(q | k) (its weight is qkv_rotary_proj).
  if (weightName.includes('rotary')) return null;
  const kvDim = spec.numKeyValueHeads * spec.headDim;
  if (module === 'qkv_proj') {
    const qDim = outDim - 2 * kvDim;
    return [
      { module: 'q_proj', colStart: 0, width: qDim, scale: 1 / Math.sqrt(spec.headDim) },
      { module: 'k_proj', colStart: qDim, width: kvDim, scale: 1 },
      { module: 'v_proj', colStart: qDim + kvDim, width: kvDim, scale: 1 },
    ];
  }
  if (module === 'qk_proj') {
    const qDim = outDim - kvDim;
    return [
      { module: 'q_proj', colStart: 0, width: qDim, scale: 1 },
      { module: 'k_proj', colStart: qDim, width: kvDim, scale: 1 },
    ];
  }
  if (module === 'gate_up_proj') {
    return [
      { module: 'gate_proj', colStart: 0, width: outDim / 2, scale: 1 },
      { module: 'up_proj', colStart: outDim / 2, width: outDim / 2, scale: 1 },
    ];
  }
  return [{ module, colStart: 0, width: outDim, scale: 1 }];
}

interface ParsedNode {
  record: ProtoRecord;
  name: string;
  opType: string;
  inputs: string[];
  outputs: string[];
}

function parseNode(record: ProtoRecord): ParsedNode {
  const node: ParsedNode = { record, name: '', opType: '', inputs: [], outputs: [] };
  for (const field of readRecords(record.payload!)) {
    if (field.field === 1) node.inputs.push(stringOf(field));
    else if (field.field === 2) node.outputs.push(stringOf(field));
    else if (field.field === 3) node.name = stringOf(field);
    else if (field.field === 4) node.opType = stringOf(field);
  }
  return node;
}

/** An initializer's name, element type and dims (its data is skipped, not decoded). */
function parseInitializer(record: ProtoRecord): { name: string; dataType: number; dims: number[] } {
  let name = '';
  let dataType = 0;
  const dims: number[] = [];
  for (const field of readRecords(record.payload!)) {
    if (field.field === 8) name = stringOf(field);
    else if (field.field === 2) dataType = Number(field.varint);
    else if (field.field === 1 && field.wire === 0) dims.push(Number(field.varint));
    else if (field.field === 1 && field.wire === 2) {
      // Packed repeated int64.
      for (const packed of readPackedVarints(field.payload!)) dims.push(packed);
    }
  }
  return { name, dataType, dims };
}

function readPackedVarints(bytes: Uint8Array): number[] {
  const out: number[] = [];
  let value = 0n;
  let shift = 0n;
  for (const byte of bytes) {
    value |= BigInt(byte & 0x7f) << shift;
    if (byte & 0x80) shift += 7n;
    else {
      out.push(Number(value));
      value = 0n;
      shift = 0n;
    }
  }
  return out;
}

export class LoraGraphError extends Error {}

export interface LoraGraphOptions {
  slots: number;
  rank: number;
  /** Names the graph in refusals. */
  label: string;
}

/** The LoRA graph's bytes and its layout; throws LoraGraphError naming what cannot take adapters. */
export function buildLoraGraph(model: Uint8Array, spec: ModelSpec, options: LoraGraphOptions): { model: Uint8Array; layout: LoraGraphLayout } {
  const fail = (message: string): never => {
    throw new LoraGraphError(`${options.label} cannot take LoRA adapters: ${message}`);
  };
  const modelRecords = readRecords(model);
  const graphRecord = modelRecords.find((record) => record.field === 7);
  if (!graphRecord) return fail('it has no graph.');
  const producer = modelRecords.find((record) => record.field === 2);
  const ownLayout = producer !== undefined && stringOf(producer).startsWith('edge-llm');
  const graphRecords = readRecords(graphRecord.payload!);

  const initializers = new Map<string, { dataType: number; dims: number[] }>();
  for (const record of graphRecords) {
    if (record.field === 5) {
      const { name, ...rest } = parseInitializer(record);
      initializers.set(name, rest);
    }
  }

  const { slots, rank } = options;
  const columnsPerLane = slots * rank;
  const targets: LoraTarget[] = [];
  const targetByRecord = new Map<ProtoRecord, { node: ParsedNode; target: LoraTarget }>();
  const modules = new Set<string>();
  let aRows = 0;
  let bCols = 0;
  for (const record of graphRecords) {
    if (record.field !== 1) continue;
    const node = parseNode(record);
    const match = TARGET_NODE.exec(node.name);
    if (!match) continue;
    const [, layerText, module] = match;
    if (node.opType !== 'MatMul') fail(`its projection "${node.name}" is a ${node.opType} node; adapters need a float32 MatMul there.`);
    const weight = initializers.get(node.inputs[1] ?? '');
    if (!weight || weight.dims.length !== 2) fail(`the weight of "${node.name}" is not a 2-D initializer.`);
    if (weight!.dataType !== ONNX_FLOAT) fail(`the weight of "${node.name}" is not float32 (ONNX type ${weight!.dataType}); adapters need float32 projections.`);
    const [inDim, outDim] = weight!.dims;
    const lanes = ownLayout ? fusedLanes(module, node.inputs[1], outDim, spec) : [{ module, colStart: 0, width: outDim, scale: 1 }];
    if (lanes === null) fail(`its projection "${node.name}" mixes rotated and plain columns (weight "${node.inputs[1]}", the converter's "portable" flavour); convert with --ops=fused.`);
    for (const lane of lanes!) modules.add(lane.module);
    const target: LoraTarget = { layer: Number(layerText), node: node.name, inDim, outDim, aRow: aRows, bCol: bCols, lanes: lanes! };
    aRows += inDim;
    bCols += outDim;
    targets.push(target);
    targetByRecord.set(record, { node, target });
  }
  if (targets.length === 0) {
    fail(
      'it has no float32 projection named "/model/layers.N/<block>/<module>/MatMul" at its top level ' +
        '(quantized exports and merged decoders with If branches are not supported).',
    );
  }
  const maxLanes = Math.max(...targets.map((target) => target.lanes.length));

  // ---- the new graph ----
  let counter = 0;
  const extraInitializers: Uint8Array[] = [];
  const int64Constant = (values: readonly number[]): string => {
    const name = `lora/const_${counter++}`;
    const data = new Uint8Array(values.length * 8);
    const view = new DataView(data.buffer);
    values.forEach((v, i) => view.setBigInt64(i * 8, BigInt(v), true));
    extraInitializers.push(
      bytesField(5, concat([varintField(1, values.length), varintField(2, ONNX_INT64), stringField(8, name), bytesField(9, data)])),
    );
    return name;
  };
  const nodeBytes = (opType: string, inputs: string[], outputs: string[], name: string) =>
    bytesField(1, concat([...inputs.map((i) => stringField(1, i)), ...outputs.map((o) => stringField(2, o)), stringField(3, name), stringField(4, opType)]));

  const maskByLanes = new Map<number, string>([[1, LORA_INPUTS.mask]]);
  const maskNodes: Uint8Array[] = [];
  for (let lanes = 2; lanes <= maxLanes; lanes++) {
    const output = `lora/mask_x${lanes}`;
    maskNodes.push(nodeBytes('Tile', [LORA_INPUTS.mask, int64Constant([1, 1, lanes])], [output], `/lora/mask_x${lanes}/Tile`));
    maskByLanes.set(lanes, output);
  }

  const axes = int64Constant([0, 1]);
  const newGraph: Uint8Array[] = [];
  let masksPlaced = false;
  for (const record of graphRecords) {
    const hit = targetByRecord.get(record);
    if (record.field === 1 && !masksPlaced) {
      newGraph.push(...maskNodes);
      masksPlaced = true;
    }
    if (!hit) {
      newGraph.push(record.raw);
      continue;
    }
    const { node, target } = hit;
    const y = node.outputs[0];
    const base = `${y}/lora_base`;
    const columns = target.lanes.length * columnsPerLane;
    const scope = `${node.name.slice(0, -'/MatMul'.length)}/lora`;
    newGraph.push(renameOutput(record, y, base));
    const a = `${scope}/A`;
    const b = `${scope}/B`;
    newGraph.push(
      nodeBytes('Slice', [LORA_INPUTS.a, int64Constant([target.aRow, 0]), int64Constant([target.aRow + target.inDim, columns]), axes], [a], `${scope}/Slice_A`),
      nodeBytes('Slice', [LORA_INPUTS.b, int64Constant([0, target.bCol]), int64Constant([columns, target.bCol + target.outDim]), axes], [b], `${scope}/Slice_B`),
      nodeBytes('MatMul', [node.inputs[0], a], [`${scope}/xA`], `${scope}/MatMul_A`),
      nodeBytes('Mul', [`${scope}/xA`, maskByLanes.get(target.lanes.length)!], [`${scope}/xA_masked`], `${scope}/Mul_mask`),
      nodeBytes('MatMul', [`${scope}/xA_masked`, b], [`${scope}/delta`], `${scope}/MatMul_B`),
      nodeBytes('Add', [base, `${scope}/delta`], [y], `${scope}/Add`),
    );
  }
  const tableColumns = maxLanes * columnsPerLane;
  newGraph.push(
    ...extraInitializers,
    graphInput(LORA_INPUTS.a, [aRows, tableColumns]),
    graphInput(LORA_INPUTS.b, [tableColumns, bCols]),
    graphInput(LORA_INPUTS.mask, ['batch_size', 1, columnsPerLane]),
  );
  const graph = concat(newGraph);
  const out = concat(modelRecords.map((record) => (record === graphRecord ? bytesField(7, graph) : record.raw)));
  return { model: out, layout: { targets, slots, rank, maxLanes, aRows, bCols, modules } };
}

function renameOutput(record: ProtoRecord, from: string, to: string): Uint8Array {
  let renamed = false;
  const fields = readRecords(record.payload!).map((field) => {
    if (!renamed && field.field === 2 && stringOf(field) === from) {
      renamed = true;
      return stringField(2, to);
    }
    return field.raw;
  });
  return bytesField(1, concat(fields));
}

/** A float32 graph input (ValueInfoProto: name, TypeProto.tensor_type{elem_type, shape}). */
function graphInput(name: string, dims: ReadonlyArray<number | string>): Uint8Array {
  const dimRecords = dims.map((d) => bytesField(1, typeof d === 'number' ? varintField(1, d) : stringField(2, d)));
  const tensorType = concat([varintField(1, ONNX_FLOAT), bytesField(2, concat(dimRecords))]);
  return bytesField(11, concat([stringField(1, name), bytesField(2, bytesField(1, tensorType))]));
}
