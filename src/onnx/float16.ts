/**
 * float16 → float32, for the logits of fp16 / q4f16 exports: onnxruntime's JS packages
 * hand float16 tensors over as Uint16Array bit patterns where the JavaScript engine has no
 * Float16Array (Node 20), and as a Float16Array where it has one (Chromium since 135); the
 * engine keeps float16 data as bit patterns either way, and the sampler works in float32.
 * Converted once per step through a 65536-entry table.
 */
let table: Float32Array | undefined;

function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

export function float16ToFloat32(bits: Uint16Array): Float32Array {
  if (table === undefined) {
    table = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) table[i] = halfToFloat(i);
  }
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = table[bits[i]];
  return out;
}

const floatView = new Float32Array(1);
const bitsView = new Uint32Array(floatView.buffer);

/** float32 → float16 bits, rounding to nearest even (for fp16 inputs_embeds). */
export function float32ToFloat16(values: Float32Array): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) {
    floatView[0] = values[i];
    const x = bitsView[0];
    const sign = (x >>> 16) & 0x8000;
    const exponent = (x >>> 23) & 0xff;
    let mantissa = x & 0x7fffff;
    if (exponent === 0xff) {
      out[i] = sign | 0x7c00 | (mantissa !== 0 ? 0x200 : 0);
      continue;
    }
    const e = exponent - 127 + 15;
    if (e >= 0x1f) {
      out[i] = sign | 0x7c00;
      continue;
    }
    if (e <= 0) {
      if (e < -10) {
        out[i] = sign;
        continue;
      }
      mantissa |= 0x800000;
      const shift = 14 - e;
      const half = 1 << (shift - 1);
      let result = mantissa >> shift;
      const rest = mantissa & ((1 << shift) - 1);
      if (rest > half || (rest === half && (result & 1) === 1)) result += 1;
      out[i] = sign | result;
      continue;
    }
    let result = (e << 10) | (mantissa >> 13);
    const rest = mantissa & 0x1fff;
    if (rest > 0x1000 || (rest === 0x1000 && (result & 1) === 1)) result += 1;
    out[i] = sign | result;
  }
  return out;
}

/**
 * A float16 tensor's data as Uint16Array bit patterns, without copying: a Float16Array (what
 * onnxruntime-web returns in browsers that have it) is viewed as its bits.
 */
export function float16Bits(data: ArrayBufferView & { length: number }): Uint16Array {
  return data instanceof Uint16Array ? data : new Uint16Array(data.buffer, data.byteOffset, data.length);
}

/** A float32 or float16 tensor's data as float32 (float16 given as bits or as a Float16Array). */
export function float32Of(data: ArrayBufferView & { length: number }): Float32Array {
  return data instanceof Float32Array ? data : float16ToFloat32(float16Bits(data));
}
