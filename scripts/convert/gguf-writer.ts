/**
 * Writes GGUF (version 3), llama.cpp's model file: a header, typed key/value metadata,
 * tensor descriptions, then the tensor data, each tensor aligned to `general.alignment`
 * (32, the default). Dimensions are listed innermost first (ggml's ne0, ne1): an nn.Linear
 * weight [out, in] is the tensor [in, out]. F32, F16 and Q4_0 tensors.
 */
import { closeSync, openSync, writeSync } from 'node:fs';

export const GGUF_ALIGNMENT = 32;

/** ggml_type values. */
export const GgmlType = { F32: 0, F16: 1, Q4_0: 2 } as const;
export type GgmlType = (typeof GgmlType)[keyof typeof GgmlType];

/** gguf_type values. */
const T = { UINT32: 4, INT32: 5, FLOAT32: 6, BOOL: 7, STRING: 8, ARRAY: 9 } as const;

export type GgufValue =
  | { type: 'uint32'; value: number }
  | { type: 'int32'; value: number }
  | { type: 'float32'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'strings'; value: readonly string[] }
  | { type: 'float32s'; value: ArrayLike<number> }
  | { type: 'int32s'; value: ArrayLike<number> };

export interface GgufTensor {
  name: string;
  /** Innermost first. */
  dims: readonly number[];
  type: GgmlType;
  data: Uint8Array;
}

export interface GgufModel {
  metadata: ReadonlyArray<readonly [string, GgufValue]>;
  tensors: readonly GgufTensor[];
}

/** Byte size of a tensor of `type` with these dims (Q4_0: 18 bytes per 32 elements). */
export function ggmlTensorBytes(type: GgmlType, dims: readonly number[]): number {
  const count = dims.reduce((a, b) => a * b, 1);
  if (type === GgmlType.F32) return count * 4;
  if (type === GgmlType.F16) return count * 2;
  if (dims[0] % 32 !== 0) throw new Error(`Q4_0 needs rows of a multiple of 32 elements, got ${dims[0]}`);
  return (count / 32) * 18;
}

class ByteSink {
  private chunks: Uint8Array[] = [];
  private scratch = new DataView(new ArrayBuffer(8));
  size = 0;
  private raw(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.size += bytes.byteLength;
  }
  private fixed(bytes: number, write: (view: DataView) => void): void {
    write(this.scratch);
    this.raw(new Uint8Array(this.scratch.buffer.slice(0, bytes)));
  }
  u32(v: number) { this.fixed(4, (d) => d.setUint32(0, v, true)); }
  i32(v: number) { this.fixed(4, (d) => d.setInt32(0, v, true)); }
  f32(v: number) { this.fixed(4, (d) => d.setFloat32(0, v, true)); }
  u64(v: number) { this.fixed(8, (d) => d.setBigUint64(0, BigInt(v), true)); }
  u8(v: number) { this.raw(Uint8Array.of(v)); }
  string(s: string) {
    const bytes = new TextEncoder().encode(s);
    this.u64(bytes.byteLength);
    this.raw(bytes);
  }
  bytes(b: Uint8Array) { this.raw(b); }
  pad(alignment: number) {
    const padding = (alignment - (this.size % alignment)) % alignment;
    if (padding > 0) this.raw(new Uint8Array(padding));
  }
  take(): Uint8Array[] { return this.chunks; }
}

function writeValue(sink: ByteSink, value: GgufValue): void {
  switch (value.type) {
    case 'uint32': sink.u32(T.UINT32); sink.u32(value.value); break;
    case 'int32': sink.u32(T.INT32); sink.i32(value.value); break;
    case 'float32': sink.u32(T.FLOAT32); sink.f32(value.value); break;
    case 'bool': sink.u32(T.BOOL); sink.u8(value.value ? 1 : 0); break;
    case 'string': sink.u32(T.STRING); sink.string(value.value); break;
    case 'strings':
      sink.u32(T.ARRAY); sink.u32(T.STRING); sink.u64(value.value.length);
      for (const s of value.value) sink.string(s);
      break;
    case 'float32s': {
      sink.u32(T.ARRAY); sink.u32(T.FLOAT32); sink.u64(value.value.length);
      const data = Float32Array.from(value.value);
      sink.bytes(new Uint8Array(data.buffer));
      break;
    }
    case 'int32s': {
      sink.u32(T.ARRAY); sink.u32(T.INT32); sink.u64(value.value.length);
      const data = Int32Array.from(value.value);
      sink.bytes(new Uint8Array(data.buffer));
      break;
    }
  }
}

/** The file's bytes, as chunks in order (a 135M-parameter model is written without one big copy). */
export function encodeGguf(model: GgufModel): Uint8Array[] {
  const sink = new ByteSink();
  sink.bytes(new TextEncoder().encode('GGUF'));
  sink.u32(3);
  sink.u64(model.tensors.length);
  sink.u64(model.metadata.length);
  for (const [key, value] of model.metadata) {
    sink.string(key);
    writeValue(sink, value);
  }
  let offset = 0;
  for (const tensor of model.tensors) {
    const expected = ggmlTensorBytes(tensor.type, tensor.dims);
    if (tensor.data.byteLength !== expected) {
      throw new Error(`GGUF tensor ${tensor.name}: ${tensor.data.byteLength} bytes, expected ${expected}`);
    }
    sink.string(tensor.name);
    sink.u32(tensor.dims.length);
    for (const d of tensor.dims) sink.u64(d);
    sink.u32(tensor.type);
    sink.u64(offset);
    offset += Math.ceil(expected / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;
  }
  sink.pad(GGUF_ALIGNMENT);
  for (const tensor of model.tensors) {
    sink.bytes(tensor.data);
    sink.pad(GGUF_ALIGNMENT);
  }
  return sink.take();
}

export function writeGgufFile(path: string, model: GgufModel): void {
  const fd = openSync(path, 'w');
  try {
    for (const chunk of encodeGguf(model)) writeSync(fd, chunk);
  } finally {
    closeSync(fd);
  }
}
