/**
 * One row of last hidden states → one embedding, as sentence-transformers' Pooling and
 * Normalize modules compute it, then vLLM's `dimensions` (Matryoshka: the first d values,
 * normalized after the cut when the model normalizes).
 */
import type { PoolingMode } from './pooling-config.js';

/**
 * Pools row `row` of `hidden` ([batch, seqLen, width], row-major). The row's real tokens
 * are its first `length` positions (inputs are right-padded).
 */
export function poolRow(hidden: Float32Array, row: number, seqLen: number, width: number, length: number, mode: PoolingMode): Float32Array {
  const rowStart = row * seqLen * width;
  if (mode === 'cls') return hidden.slice(rowStart, rowStart + width);
  if (mode === 'last') {
    const at = rowStart + (length - 1) * width;
    return hidden.slice(at, at + width);
  }
  // Mean over the real tokens, summed in float64 as torch's float32 sum is close enough to either.
  const sum = new Float64Array(width);
  for (let position = 0; position < length; position += 1) {
    const at = rowStart + position * width;
    for (let i = 0; i < width; i += 1) sum[i]! += hidden[at + i]!;
  }
  const out = new Float32Array(width);
  const count = Math.max(length, 1e-9);
  for (let i = 0; i < width; i += 1) out[i] = sum[i]! / count;
  return out;
}

/** x / max(‖x‖₂, 1e-12), as torch.nn.functional.normalize (sentence-transformers' Normalize). */
export function l2Normalize(vector: Float32Array): Float32Array {
  let squares = 0;
  for (const value of vector) squares += value * value;
  const norm = Math.max(Math.sqrt(squares), 1e-12);
  return vector.map((value) => value / norm);
}

/** What a request asks of a pooled vector: vLLM's order (cut to `dimensions`, then normalize). */
export function finishEmbedding(pooled: Float32Array, options: { dimensions?: number; normalize: boolean }): Float32Array {
  const cut = options.dimensions !== undefined && options.dimensions < pooled.length ? pooled.slice(0, options.dimensions) : pooled;
  return options.normalize ? l2Normalize(cut) : cut;
}
