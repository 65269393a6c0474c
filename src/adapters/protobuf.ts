/**
 * Just enough protobuf to edit a serialized ONNX model: split a message into its field
 * records (kept as raw bytes, so whatever is not edited is written back untouched) and
 * encode new records. Wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
 */
export interface ProtoRecord {
  field: number;
  wire: number;
  /** The whole record (tag included), to write back unchanged. */
  raw: Uint8Array;
  /** Length-delimited payload (wire 2). */
  payload?: Uint8Array;
  /** Varint value (wire 0). */
  varint?: bigint;
}

function readVarint(bytes: Uint8Array, at: number): [value: bigint, next: number] {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    if (at >= bytes.length) throw new Error('truncated protobuf varint');
    const byte = bytes[at++];
    value |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [value, at];
    shift += 7n;
  }
}

export function readRecords(bytes: Uint8Array): ProtoRecord[] {
  const records: ProtoRecord[] = [];
  let at = 0;
  while (at < bytes.length) {
    const start = at;
    const [tag, afterTag] = readVarint(bytes, at);
    at = afterTag;
    const field = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    const record: ProtoRecord = { field, wire, raw: bytes };
    if (wire === 0) {
      [record.varint, at] = readVarint(bytes, at);
    } else if (wire === 1) {
      at += 8;
    } else if (wire === 5) {
      at += 4;
    } else if (wire === 2) {
      const [length, afterLength] = readVarint(bytes, at);
      at = afterLength + Number(length);
      record.payload = bytes.subarray(afterLength, at);
    } else {
      throw new Error(`unsupported protobuf wire type ${wire}`);
    }
    if (at > bytes.length) throw new Error('truncated protobuf record');
    record.raw = bytes.subarray(start, at);
    records.push(record);
  }
  return records;
}

export function stringOf(record: ProtoRecord): string {
  return new TextDecoder().decode(record.payload);
}

function varintBytes(value: number | bigint): number[] {
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return out;
}

export function varintField(field: number, value: number | bigint): Uint8Array {
  return Uint8Array.from([...varintBytes(field << 3), ...varintBytes(value)]);
}

export function bytesField(field: number, payload: Uint8Array): Uint8Array {
  return concat([Uint8Array.from([...varintBytes((field << 3) | 2), ...varintBytes(payload.length)]), payload]);
}

export function stringField(field: number, text: string): Uint8Array {
  return bytesField(field, new TextEncoder().encode(text));
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
