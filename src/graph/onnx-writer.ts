/**
 * Serialises an ONNX model (the subset of onnx.proto this project emits) to protobuf bytes.
 * Field numbers follow onnx/onnx.proto (proto2; repeated scalars written unpacked).
 */
import { ProtobufWriter } from './protobuf-writer.js';

/** TensorProto.DataType values used here. */
export const OnnxDataType = {
  FLOAT: 1,
  UINT8: 2,
  INT32: 6,
  INT64: 7,
  BOOL: 9,
  FLOAT16: 10,
  BFLOAT16: 16,
} as const;
export type OnnxDataType = (typeof OnnxDataType)[keyof typeof OnnxDataType];

/** The IR version and default-domain opset the converter's graphs declare (IR 8 goes with opset 17: ONNX 1.12). */
export const ONNX_IR_VERSION = 8;
export const ONNX_OPSET = 17;

export interface OnnxTensor {
  name: string;
  dataType: OnnxDataType;
  dims: readonly number[];
  /** Little-endian element bytes (TensorProto.raw_data); ignored when `external` is set. */
  rawData: Uint8Array;
  /** The bytes live in an external data file beside the model (TensorProto.external_data). */
  external?: { location: string; offset: number; length: number };
}

/**
 * Attribute values: integers (number or bigint) become INT, other numbers FLOAT, arrays INTS.
 * Wrap a whole-number float as `{ float: 1 }` so it is not written as an INT.
 */
export type OnnxAttributeValue = number | bigint | string | readonly number[] | { float: number } | OnnxTensor;

export interface OnnxAttribute {
  name: string;
  value: OnnxAttributeValue;
}

export interface OnnxNode {
  opType: string;
  name: string;
  inputs: readonly string[];
  outputs: readonly string[];
  attributes?: readonly OnnxAttribute[];
  /** Operator set domain; the default ai.onnx domain when absent (e.g. 'com.microsoft' for contrib ops). */
  domain?: string;
}

/** A dimension is a fixed size or a symbolic name (dim_param). */
export type OnnxDim = number | string;

export interface OnnxValueInfo {
  name: string;
  elemType: OnnxDataType;
  shape: readonly OnnxDim[];
}

export interface OnnxGraph {
  name: string;
  nodes: readonly OnnxNode[];
  initializers: readonly OnnxTensor[];
  inputs: readonly OnnxValueInfo[];
  outputs: readonly OnnxValueInfo[];
}

export interface OnnxModel {
  irVersion: number;
  opsetVersion: number;
  producerName: string;
  producerVersion: string;
  docString?: string;
  metadata?: Readonly<Record<string, string>>;
  /** Versions of further operator set domains the nodes use, e.g. { 'com.microsoft': 1 }. */
  extraOpsets?: Readonly<Record<string, number>>;
  graph: OnnxGraph;
}

// AttributeProto.AttributeType
const ATTR_FLOAT = 1;
const ATTR_INT = 2;
const ATTR_STRING = 3;
const ATTR_TENSOR = 4;
const ATTR_INTS = 7;

export function encodeOnnxModel(model: OnnxModel): Uint8Array {
  const w = new ProtobufWriter();
  w.int(1, model.irVersion);
  w.string(2, model.producerName);
  w.string(3, model.producerVersion);
  if (model.docString) w.string(6, model.docString);
  w.message(7, (g) => writeGraph(g, model.graph));
  w.message(8, (o) => {
    o.string(1, ''); // default domain (ai.onnx)
    o.int(2, model.opsetVersion);
  });
  for (const [domain, version] of Object.entries(model.extraOpsets ?? {})) {
    w.message(8, (o) => {
      o.string(1, domain);
      o.int(2, version);
    });
  }
  for (const [key, value] of Object.entries(model.metadata ?? {})) {
    w.message(14, (m) => {
      m.string(1, key);
      m.string(2, value);
    });
  }
  return w.finish();
}

function writeGraph(w: ProtobufWriter, graph: OnnxGraph): void {
  for (const node of graph.nodes) w.message(1, (n) => writeNode(n, node));
  w.string(2, graph.name);
  for (const t of graph.initializers) w.message(5, (m) => writeTensor(m, t));
  for (const v of graph.inputs) w.message(11, (m) => writeValueInfo(m, v));
  for (const v of graph.outputs) w.message(12, (m) => writeValueInfo(m, v));
}

function writeNode(w: ProtobufWriter, node: OnnxNode): void {
  for (const i of node.inputs) w.string(1, i);
  for (const o of node.outputs) w.string(2, o);
  w.string(3, node.name);
  w.string(4, node.opType);
  for (const a of node.attributes ?? []) w.message(5, (m) => writeAttribute(m, a));
  if (node.domain) w.string(7, node.domain);
}

function writeAttribute(w: ProtobufWriter, attr: OnnxAttribute): void {
  w.string(1, attr.name);
  const { value } = attr;
  if (typeof value === 'string') {
    w.string(4, value);
    w.int(20, ATTR_STRING);
  } else if (typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value))) {
    w.int(3, value);
    w.int(20, ATTR_INT);
  } else if (typeof value === 'number' || 'float' in value) {
    w.float(2, typeof value === 'number' ? value : value.float);
    w.int(20, ATTR_FLOAT);
  } else if (isNumberArray(value)) {
    for (const v of value) w.int(8, v);
    w.int(20, ATTR_INTS);
  } else {
    w.message(5, (m) => writeTensor(m, value));
    w.int(20, ATTR_TENSOR);
  }
}

function isNumberArray(value: OnnxAttributeValue): value is readonly number[] {
  return Array.isArray(value);
}

function writeTensor(w: ProtobufWriter, t: OnnxTensor): void {
  for (const d of t.dims) w.int(1, d);
  w.int(2, t.dataType);
  w.string(8, t.name);
  if (t.external) {
    const entries: Array<[string, string]> = [
      ['location', t.external.location],
      ['offset', String(t.external.offset)],
      ['length', String(t.external.length)],
    ];
    for (const [key, value] of entries) {
      w.message(13, (entry) => {
        entry.string(1, key);
        entry.string(2, value);
      });
    }
    w.int(14, 1); // data_location: EXTERNAL
  } else {
    w.bytes(9, t.rawData);
  }
}

function writeValueInfo(w: ProtobufWriter, v: OnnxValueInfo): void {
  w.string(1, v.name);
  w.message(2, (type) =>
    type.message(1, (tensor) => {
      tensor.int(1, v.elemType);
      tensor.message(2, (shape) => {
        for (const d of v.shape) {
          shape.message(1, (dim) => {
            if (typeof d === 'number') dim.int(1, d);
            else dim.string(2, d);
          });
        }
      });
    }),
  );
}
