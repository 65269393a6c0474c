/**
 * Minimal protobuf wire-format writer: just what ONNX's messages need (varints, 64-bit
 * signed ints, fixed32 floats, length-delimited bytes/strings/sub-messages).
 */

const enum WireType {
  Varint = 0,
  LengthDelimited = 2,
  Fixed32 = 5,
}

export class ProtobufWriter {
  private chunks: Uint8Array[] = [];
  private scratch = new Uint8Array(1024);
  private used = 0;

  private reserve(n: number): void {
    if (this.used + n <= this.scratch.length) return;
    this.flushScratch();
    if (n > this.scratch.length) this.scratch = new Uint8Array(n);
  }

  private flushScratch(): void {
    if (this.used === 0) return;
    this.chunks.push(this.scratch.slice(0, this.used));
    this.used = 0;
  }

  private rawVarint(value: bigint): void {
    // Negative int64s are sent as their 64-bit two's complement: always 10 bytes.
    let v = BigInt.asUintN(64, value);
    this.reserve(10);
    while (v >= 0x80n) {
      this.scratch[this.used++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.scratch[this.used++] = Number(v);
  }

  private tag(field: number, wire: WireType): void {
    this.rawVarint(BigInt((field << 3) | wire));
  }

  /** int32, int64 and enum fields (proto2 `int64` semantics for negatives). */
  int(field: number, value: number | bigint): void {
    this.tag(field, WireType.Varint);
    this.rawVarint(BigInt(value));
  }

  float(field: number, value: number): void {
    this.tag(field, WireType.Fixed32);
    this.reserve(4);
    new DataView(this.scratch.buffer).setFloat32(this.used, value, true);
    this.used += 4;
  }

  bytes(field: number, value: Uint8Array): void {
    this.tag(field, WireType.LengthDelimited);
    this.rawVarint(BigInt(value.byteLength));
    if (value.byteLength > 256) {
      // Large payloads (tensor raw_data) are kept by reference instead of copied.
      this.flushScratch();
      this.chunks.push(value);
      return;
    }
    this.reserve(value.byteLength);
    this.scratch.set(value, this.used);
    this.used += value.byteLength;
  }

  string(field: number, value: string): void {
    this.bytes(field, new TextEncoder().encode(value));
  }

  message(field: number, build: (w: ProtobufWriter) => void): void {
    const inner = new ProtobufWriter();
    build(inner);
    this.bytes(field, inner.finish());
  }

  finish(): Uint8Array {
    this.flushScratch();
    const total = this.chunks.reduce((n, c) => n + c.byteLength, 0);
    const out = new Uint8Array(total);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.byteLength;
    }
    return out;
  }
}
