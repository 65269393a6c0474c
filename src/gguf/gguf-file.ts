/**
 * Reader for GGUF (versions 2 and 3), llama.cpp's model file: a header, typed key/value
 * metadata, a table of tensors (name, dims innermost first, ggml type, offset), then the
 * tensor data, aligned to `general.alignment` (32 by default).
 *
 * Only the header and the table are read up front, through a `ByteSource` (a file handle
 * under Node, a Blob in a page); tensor data is read one tensor at a time when asked for.
 * Every length and offset is checked against the file's size, so a truncated or corrupt
 * file is refused with what is wrong and where, before any weight is read.
 */
import { GGML_TYPES, type GgmlTypeInfo } from './ggml-types.js';

export interface ByteSource {
  readonly size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
}

export type GgufScalar = number | bigint | boolean | string;
export type GgufMetadataValue = GgufScalar | GgufScalar[];

export interface GgufTensorInfo {
  name: string;
  /** ggml's ne: innermost (contiguous) dimension first. */
  dims: number[];
  typeId: number;
  type: GgmlTypeInfo | undefined;
  /** Absolute byte offset of the data in the file. */
  offset: number;
  byteLength: number;
}

export interface GgufFile {
  version: number;
  metadata: Map<string, GgufMetadataValue>;
  tensors: GgufTensorInfo[];
  dataOffset: number;
  source: ByteSource;
}

export class GgufFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GgufFormatError';
  }
}

const MAGIC = 0x46554747; // "GGUF" little-endian
const WINDOW = 1 << 20;
/** Bounds that no real file reaches; a corrupt count fails here rather than allocating. */
const MAX_COUNT = 1 << 26;
const MAX_DIMS = 4;

enum ValueType {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
}

const FIXED_SIZES: Partial<Record<ValueType, number>> = {
  [ValueType.UINT8]: 1, [ValueType.INT8]: 1, [ValueType.UINT16]: 2, [ValueType.INT16]: 2,
  [ValueType.UINT32]: 4, [ValueType.INT32]: 4, [ValueType.FLOAT32]: 4, [ValueType.BOOL]: 1,
  [ValueType.UINT64]: 8, [ValueType.INT64]: 8, [ValueType.FLOAT64]: 8,
};

/** Sequential reads through a window, so tens of thousands of small fields cost few reads. */
class Cursor {
  position = 0;
  private window: Uint8Array = new Uint8Array(0);
  private windowStart = 0;
  private readonly decoder = new TextDecoder('utf-8', { fatal: false });

  constructor(private readonly source: ByteSource) {}

  private async take(length: number, what: string): Promise<DataView> {
    if (this.position + length > this.source.size) {
      throw new GgufFormatError(`the file ends inside ${what} at byte ${this.position} (it is ${this.source.size} bytes): truncated?`);
    }
    if (this.position < this.windowStart || this.position + length > this.windowStart + this.window.byteLength) {
      const want = Math.min(Math.max(length, WINDOW), this.source.size - this.position);
      this.window = await this.source.read(this.position, want);
      this.windowStart = this.position;
    }
    const from = this.position - this.windowStart;
    this.position += length;
    return new DataView(this.window.buffer, this.window.byteOffset + from, length);
  }

  async u32(what: string): Promise<number> {
    return (await this.take(4, what)).getUint32(0, true);
  }

  async u64(what: string): Promise<number> {
    const value = (await this.take(8, what)).getBigUint64(0, true);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new GgufFormatError(`${what} is implausibly large (${value})`);
    return Number(value);
  }

  async string(what: string): Promise<string> {
    const length = await this.u64(`the length of ${what}`);
    const view = await this.take(length, what);
    return this.decoder.decode(new Uint8Array(view.buffer, view.byteOffset, length));
  }

  async scalar(type: ValueType, what: string): Promise<GgufScalar> {
    if (type === ValueType.STRING) return this.string(what);
    const size = FIXED_SIZES[type];
    if (size === undefined) throw new GgufFormatError(`${what} has an unknown value type ${type}`);
    const view = await this.take(size, what);
    switch (type) {
      case ValueType.UINT8: return view.getUint8(0);
      case ValueType.INT8: return view.getInt8(0);
      case ValueType.UINT16: return view.getUint16(0, true);
      case ValueType.INT16: return view.getInt16(0, true);
      case ValueType.UINT32: return view.getUint32(0, true);
      case ValueType.INT32: return view.getInt32(0, true);
      case ValueType.FLOAT32: return view.getFloat32(0, true);
      case ValueType.BOOL: return view.getUint8(0) !== 0;
      case ValueType.UINT64: return view.getBigUint64(0, true);
      case ValueType.INT64: return view.getBigInt64(0, true);
      default: return view.getFloat64(0, true);
    }
  }
}

export async function readGguf(source: ByteSource): Promise<GgufFile> {
  const cursor = new Cursor(source);
  if (source.size < 24) throw new GgufFormatError(`not a GGUF file: ${source.size} bytes, too short for the header`);
  const magic = await cursor.u32('the magic');
  if (magic !== MAGIC) throw new GgufFormatError('not a GGUF file: it does not start with "GGUF"');
  const version = await cursor.u32('the version');
  if (version !== 2 && version !== 3) throw new GgufFormatError(`GGUF version ${version} is not supported (2 and 3 are)`);
  const tensorCount = await cursor.u64('the tensor count');
  const kvCount = await cursor.u64('the metadata count');
  if (tensorCount > MAX_COUNT || kvCount > MAX_COUNT) throw new GgufFormatError(`implausible counts: ${tensorCount} tensors, ${kvCount} metadata entries`);

  const metadata = new Map<string, GgufMetadataValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = await cursor.string(`metadata key ${i}`);
    const type = (await cursor.u32(`the type of ${key}`)) as ValueType;
    if (type === ValueType.ARRAY) {
      const itemType = (await cursor.u32(`the item type of ${key}`)) as ValueType;
      const length = await cursor.u64(`the length of ${key}`);
      if (length > MAX_COUNT || itemType === ValueType.ARRAY) throw new GgufFormatError(`metadata ${key}: an unsupported array (${length} items of type ${itemType})`);
      const items: GgufScalar[] = new Array(length);
      for (let j = 0; j < length; j++) items[j] = await cursor.scalar(itemType, `${key}[${j}]`);
      metadata.set(key, items);
    } else {
      metadata.set(key, await cursor.scalar(type, key));
    }
  }

  const infos: Array<Omit<GgufTensorInfo, 'offset' | 'byteLength'> & { relative: number }> = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = await cursor.string(`tensor ${i}'s name`);
    const nDims = await cursor.u32(`${name}'s dimension count`);
    if (nDims < 1 || nDims > MAX_DIMS) throw new GgufFormatError(`tensor ${name} has ${nDims} dimensions`);
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(await cursor.u64(`${name}'s dimension ${d}`));
    const typeId = await cursor.u32(`${name}'s type`);
    const relative = await cursor.u64(`${name}'s offset`);
    infos.push({ name, dims, typeId, type: GGML_TYPES.get(typeId), relative });
  }

  const alignmentValue = metadata.get('general.alignment') ?? 32;
  const alignment = Number(alignmentValue);
  if (!Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) {
    throw new GgufFormatError(`general.alignment ${String(alignmentValue)} is not a power of two`);
  }
  const dataOffset = Math.ceil(cursor.position / alignment) * alignment;
  const tensors = infos.map(({ relative, ...info }): GgufTensorInfo => {
    const elements = info.dims.reduce((a, b) => a * b, 1);
    let byteLength = 0;
    if (info.type) {
      if (info.dims[0] % info.type.blockSize !== 0) {
        throw new GgufFormatError(`tensor ${info.name}: rows of ${info.dims[0]} elements are not whole ${info.type.name} blocks of ${info.type.blockSize}`);
      }
      byteLength = (elements / info.type.blockSize) * info.type.blockBytes;
    }
    const offset = dataOffset + relative;
    if (relative % alignment !== 0) throw new GgufFormatError(`tensor ${info.name}: offset ${relative} is not aligned to ${alignment}`);
    if (offset + byteLength > source.size) {
      throw new GgufFormatError(
        `tensor ${info.name}'s data runs past the end of the file (bytes ${offset}..${offset + byteLength}, the file has ${source.size}): truncated?`,
      );
    }
    return { ...info, offset, byteLength };
  });
  return { version, metadata, tensors, dataOffset, source };
}

/** The tensor's raw bytes (its blocks, as stored). */
export async function readTensorBytes(file: GgufFile, tensor: GgufTensorInfo): Promise<Uint8Array> {
  return file.source.read(tensor.offset, tensor.byteLength);
}
