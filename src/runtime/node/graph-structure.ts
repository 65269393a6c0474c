/**
 * An ONNX file's structure without its weights: the ModelProto re-encoded with every
 * initializer's data fields left out (names, shapes, types, external-data entries kept).
 *
 * onnxruntime-node opens a graph by path and reads the weights itself; the engine only
 * looks at the graph's nodes (graphHasOp) and sizes. Holding the whole file in JS as well
 * doubled a fp32 model's memory: 514 MiB of ArrayBuffers beside onnxruntime's own copy on
 * the 135M-shaped model, alive while the session loads, so in the peak RSS. The file is
 * read field by field through a small window; an initializer's raw_data is skipped, not read.
 */
import { open, type FileHandle } from 'node:fs/promises';

// Protobuf field numbers (onnx.proto).
const MODEL_GRAPH = 7;
const GRAPH_INITIALIZER = 5;
/** TensorProto's data fields: float_data, int32_data, string_data, int64_data, raw_data, double_data, uint64_data. */
const TENSOR_DATA_FIELDS = new Set([4, 5, 6, 7, 9, 10, 11]);

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;
const WIRE_FIXED32 = 5;

const WINDOW_BYTES = 64 * 1024;

/** Positioned reads through one window, so thousands of small fields cost few syscalls. */
class WindowedFile {
  private window = new Uint8Array(0);
  private windowStart = 0;

  constructor(private readonly handle: FileHandle, readonly size: number) {}

  async bytes(position: number, length: number): Promise<Uint8Array> {
    if (position < this.windowStart || position + length > this.windowStart + this.window.length) {
      const want = Math.min(Math.max(length, WINDOW_BYTES), this.size - position);
      const buffer = new Uint8Array(want);
      const { bytesRead } = await this.handle.read(buffer, 0, want, position);
      if (bytesRead < length) throw new Error(`the file ends inside a field at byte ${position}`);
      this.window = buffer.subarray(0, bytesRead);
      this.windowStart = position;
    }
    const from = position - this.windowStart;
    return this.window.subarray(from, from + length);
  }

  /** A varint at `position`: its value and the bytes it took. */
  async varint(position: number): Promise<{ value: number; length: number }> {
    const head = await this.bytes(position, Math.min(10, this.size - position));
    let value = 0;
    let scale = 1;
    for (let i = 0; i < head.length; i++) {
      value += (head[i] & 0x7f) * scale;
      scale *= 128;
      if ((head[i] & 0x80) === 0) return { value, length: i + 1 };
    }
    throw new Error(`a malformed varint at byte ${position}`);
  }
}

function encodeVarint(value: number): Uint8Array {
  const out: number[] = [];
  while (value >= 0x80) {
    out.push((value % 128) | 0x80);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return Uint8Array.from(out);
}

/** Decides per field of a message: copy it, drop it, or re-encode its (message) value. */
type FieldRule = (field: number) => 'copy' | 'drop' | FieldRule;

/** The message in [start, end) re-encoded by `rule`, as chunks to concatenate. */
async function rewriteMessage(file: WindowedFile, start: number, end: number, rule: FieldRule): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  let position = start;
  while (position < end) {
    const tag = await file.varint(position);
    const field = Math.floor(tag.value / 8);
    const wire = tag.value % 8;
    let valueStart = position + tag.length;
    let valueEnd: number;
    if (wire === WIRE_VARINT) valueEnd = valueStart + (await file.varint(valueStart)).length;
    else if (wire === WIRE_FIXED64) valueEnd = valueStart + 8;
    else if (wire === WIRE_FIXED32) valueEnd = valueStart + 4;
    else if (wire === WIRE_LEN) {
      const length = await file.varint(valueStart);
      valueStart += length.length;
      valueEnd = valueStart + length.value;
    } else throw new Error(`an unsupported protobuf wire type ${wire} at byte ${position}`);
    if (valueEnd > end) throw new Error(`a field runs past its message at byte ${position}`);
    const action = rule(field);
    if (typeof action === 'function' && wire === WIRE_LEN) {
      const inner = await rewriteMessage(file, valueStart, valueEnd, action);
      const innerLength = inner.reduce((sum, chunk) => sum + chunk.length, 0);
      chunks.push(encodeVarint(tag.value), encodeVarint(innerLength), ...inner);
    } else if (action !== 'drop') {
      // Copied: the tag, the length prefix if any, and the value, as they are in the file.
      chunks.push((await file.bytes(position, valueEnd - position)).slice());
    }
    position = valueEnd;
  }
  return chunks;
}

const tensorRule: FieldRule = (field) => (TENSOR_DATA_FIELDS.has(field) ? 'drop' : 'copy');
const graphRule: FieldRule = (field) => (field === GRAPH_INITIALIZER ? tensorRule : 'copy');
const modelRule: FieldRule = (field) => (field === MODEL_GRAPH ? graphRule : 'copy');

/** The serialized ModelProto at `path` with its initializers' data left out. */
export async function readGraphStructure(path: string): Promise<{ structure: Uint8Array; fileBytes: number }> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    const chunks = await rewriteMessage(new WindowedFile(handle, size), 0, size, modelRule);
    const structure = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
    let at = 0;
    for (const chunk of chunks) {
      structure.set(chunk, at);
      at += chunk.length;
    }
    return { structure, fileBytes: size };
  } finally {
    await handle.close();
  }
}
