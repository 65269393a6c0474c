/**
 * float16 → float32, for the logits of fp16 / q4f16 exports: onnxruntime's JS packages
 * hand float16 tensors over as Uint16Array bit patterns (Node 20 has no Float16Array), and
 * the sampler works in float32. Converted once per step through a 65536-entry table.
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
