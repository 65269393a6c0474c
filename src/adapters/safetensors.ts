/**
 * A reader for the safetensors format (what PEFT saves adapters in): an 8-byte little-endian
 * header length, a JSON header mapping each tensor name to its dtype, shape and byte range
 * in the data section that follows. Tensors come out as float32 whatever they were stored
 * as (F32, F16, BF16); other dtypes are refused with the tensor's name.
 */
import { float16ToFloat32 } from '../onnx/float16.js';

export interface SafetensorsTensor {
  dtype: string;
  shape: number[];
  /** The values as float32, row-major. */
  data: Float32Array;
}

export class SafetensorsError extends Error {}

const FLOAT_DTYPES: Record<string, number> = { F32: 4, F16: 2, BF16: 2 };

/** Parses a whole .safetensors file; `label` names it in errors. */
export function readSafetensors(bytes: Uint8Array, label: string): Map<string, SafetensorsTensor> {
  const fail = (message: string): never => {
    throw new SafetensorsError(`${label}: ${message}`);
  };
  if (bytes.byteLength < 8) fail('too short for a safetensors file');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = Number(view.getBigUint64(0, true));
  if (headerLength > bytes.byteLength - 8) fail(`its header length (${headerLength}) runs past the end of the file`);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength))) as Record<string, unknown>;
  } catch (error) {
    return fail(`its header is not valid JSON (${(error as Error).message})`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) fail('its header is not a JSON object');
  const dataStart = 8 + headerLength;
  const dataLength = bytes.byteLength - dataStart;
  const tensors = new Map<string, SafetensorsTensor>();
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const { dtype, shape, data_offsets: offsets } = (entry ?? {}) as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof dtype !== 'string' || !Array.isArray(shape) || !Array.isArray(offsets) || offsets.length !== 2) {
      fail(`tensor "${name}" has no valid dtype / shape / data_offsets`);
    }
    const dims = shape as unknown[];
    if (!dims.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) fail(`tensor "${name}" has an invalid shape`);
    const width = FLOAT_DTYPES[dtype as string];
    if (width === undefined) fail(`tensor "${name}" is ${dtype as string}; adapters are read as F32, F16 or BF16`);
    const [begin, end] = offsets as number[];
    const count = (dims as number[]).reduce((a, b) => a * b, 1);
    if (!Number.isSafeInteger(begin) || !Number.isSafeInteger(end) || begin < 0 || end > dataLength || end - begin !== count * width) {
      fail(`tensor "${name}": data_offsets [${begin}, ${end}] do not hold ${count} ${dtype as string} values`);
    }
    tensors.set(name, {
      dtype: dtype as string,
      shape: dims as number[],
      data: toFloat32(bytes.subarray(dataStart + begin, dataStart + end), dtype as string, count),
    });
  }
  return tensors;
}

function toFloat32(raw: Uint8Array, dtype: string, count: number): Float32Array {
  // Copied first: the data section's offsets need not be aligned for a typed-array view.
  const aligned = raw.slice();
  if (dtype === 'F32') return new Float32Array(aligned.buffer, 0, count);
  const halves = new Uint16Array(aligned.buffer, 0, count);
  if (dtype === 'F16') return float16ToFloat32(halves);
  // bfloat16 is the top half of a float32.
  const words = new Uint32Array(count);
  for (let i = 0; i < count; i++) words[i] = halves[i] << 16;
  return new Float32Array(words.buffer);
}

/** Writes a safetensors file (little-endian hosts); for tests and the adapter generator. */
export function writeSafetensors(
  tensors: ReadonlyArray<{ name: string; dtype: 'F32' | 'F16' | 'BF16'; shape: readonly number[]; data: Uint8Array }>,
  metadata?: Record<string, string>,
): Uint8Array {
  const header: Record<string, unknown> = metadata ? { __metadata__: metadata } : {};
  let offset = 0;
  for (const tensor of tensors) {
    header[tensor.name] = { dtype: tensor.dtype, shape: tensor.shape, data_offsets: [offset, offset + tensor.data.byteLength] };
    offset += tensor.data.byteLength;
  }
  let json = JSON.stringify(header);
  // The data section starts 8-byte aligned, as the reference writer pads it.
  json += ' '.repeat((8 - ((8 + new TextEncoder().encode(json).length) % 8)) % 8);
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  let at = 8 + headerBytes.length;
  for (const tensor of tensors) {
    out.set(tensor.data, at);
    at += tensor.data.byteLength;
  }
  return out;
}
