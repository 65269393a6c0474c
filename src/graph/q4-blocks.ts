/**
 * 4-bit block quantization with llama.cpp's Q4_0 meaning, shared by the ONNX converter
 * (com.microsoft MatMulNBits) and the GGUF writer (GGML_TYPE_Q4_0), so both engines run the
 * very same weights.
 *
 * A matrix is quantized row by row (rows are nn.Linear output features, the 32-element
 * blocks run along the input features, as both formats store them). Per block, as Q4_0 does:
 * the element of largest magnitude m gives the scale d = m / -8, each element becomes
 * q = min(15, trunc(x / d + 8.5)) in 0..15, and means (q - 8) * d. Q4_0 stores d as float16,
 * so `quantizeQ4Rows` rounds it to float16 unless told otherwise.
 *
 * Re-quantizing weights that already lie on such a grid gives back the same q and d (the
 * element with q = 0 is the block's unique largest magnitude), also after the grid is scaled
 * by a constant: this is how the converter keeps Q4_0's blocks through its weight re-layouts
 * (row permutations, concatenations, q pre-scaled by 1/sqrt(head_dim)).
 */
import { float16ToFloat32, float32ToFloat16 } from '../onnx/float16.js';

export const Q4_BLOCK = 32;

export interface Q4Rows {
  rows: number;
  cols: number;
  /** One value 0..15 per element, row-major [rows, cols]. */
  q: Uint8Array;
  /** One scale per block, [rows, cols / 32]. */
  scales: Float32Array;
}

function roundToFloat16(value: number): number {
  return float16ToFloat32(float32ToFloat16(Float32Array.of(value)))[0];
}

/** `weights` is [rows, cols] row-major; cols must be a multiple of 32. */
export function quantizeQ4Rows(
  weights: Float32Array,
  rows: number,
  cols: number,
  options: { float16Scales?: boolean } = {},
): Q4Rows {
  if (cols % Q4_BLOCK !== 0) throw new Error(`Q4 blocks need a row length that is a multiple of ${Q4_BLOCK}, got ${cols}`);
  if (weights.length !== rows * cols) throw new Error(`Q4: ${weights.length} values for [${rows}, ${cols}]`);
  const float16Scales = options.float16Scales ?? true;
  const q = new Uint8Array(rows * cols);
  const scales = new Float32Array((rows * cols) / Q4_BLOCK);
  for (let block = 0; block < scales.length; block++) {
    const start = block * Q4_BLOCK;
    let maxAbs = 0;
    let max = 0;
    for (let j = 0; j < Q4_BLOCK; j++) {
      const v = weights[start + j];
      if (maxAbs < Math.abs(v)) {
        maxAbs = Math.abs(v);
        max = v;
      }
    }
    const d = Math.fround(max / -8);
    const inverse = d === 0 ? 0 : Math.fround(1 / d);
    for (let j = 0; j < Q4_BLOCK; j++) {
      const scaled = Math.fround(Math.fround(weights[start + j] * inverse) + 8.5);
      q[start + j] = Math.max(0, Math.min(15, Math.trunc(scaled)));
    }
    scales[block] = float16Scales ? roundToFloat16(d) : d;
  }
  return { rows, cols, q, scales };
}

/** The values the blocks mean: (q - 8) * d. */
export function dequantizeQ4Rows(blocks: Q4Rows): Float32Array {
  const out = new Float32Array(blocks.q.length);
  for (let i = 0; i < out.length; i++) out[i] = (blocks.q[i] - 8) * blocks.scales[Math.floor(i / Q4_BLOCK)];
  return out;
}

/** Weights moved onto Q4_0's grid (what a Q4_0 file of them means), same layout. */
export function snapToQ4(weights: Float32Array, rows: number, cols: number): Float32Array {
  return dequantizeQ4Rows(quantizeQ4Rows(weights, rows, cols));
}

/**
 * MatMulNBits' B input, [rows, cols / 32, 16]: element 2i of a block in the low nibble of
 * byte i, element 2i + 1 in its high nibble. Its default zero point for 4 bits is 8.
 */
export function packForMatMulNBits(blocks: Q4Rows): Uint8Array {
  const out = new Uint8Array(blocks.q.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = blocks.q[2 * i] | (blocks.q[2 * i + 1] << 4);
  return out;
}

/**
 * GGML's block_q4_0, 18 bytes per block: the float16 scale, then 16 bytes whose low nibbles
 * hold elements 0..15 and high nibbles elements 16..31.
 */
export function packQ4_0(blocks: Q4Rows): Uint8Array {
  const count = blocks.scales.length;
  const out = new Uint8Array(count * 18);
  const scaleBits = float32ToFloat16(blocks.scales);
  for (let b = 0; b < count; b++) {
    const at = b * 18;
    out[at] = scaleBits[b] & 0xff;
    out[at + 1] = scaleBits[b] >> 8;
    const start = b * Q4_BLOCK;
    for (let j = 0; j < 16; j++) out[at + 2 + j] = blocks.q[start + j] | (blocks.q[start + 16 + j] << 4);
  }
  return out;
}
