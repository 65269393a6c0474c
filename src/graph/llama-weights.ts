/**
 * Weight re-layout for the ONNX graph: nn.Linear [out, in] matrices become MatMul [in, out]
 * initializers, and related projections are fused into one matrix.
 */
import { permuteRowsForHfRope, rotateHalfRows } from './rope.js';

/**
 * [dim, outTotal] MatMul weight whose columns are q | k | rotate_half(q) | rotate_half(k) | v
 * in HF rotate-half head layout, with q (and its rotation) pre-scaled by 1/sqrt(head_dim).
 */
export function fusedQkvWeight(
  wq: Float32Array,
  wk: Float32Array,
  wv: Float32Array,
  nHeads: number,
  nKvHeads: number,
  headDim: number,
  dim: number,
  kvDim: number,
): Float32Array {
  const scale = 1 / Math.sqrt(headDim);
  const q = permuteRowsForHfRope(wq, nHeads, headDim, dim).map((x) => x * scale);
  const k = permuteRowsForHfRope(wk, nKvHeads, headDim, dim);
  const qRot = rotateHalfRows(q, nHeads, headDim, dim);
  const kRot = rotateHalfRows(k, nKvHeads, headDim, dim);
  return concatColumns(
    [
      transpose(q, dim, dim),
      transpose(k, kvDim, dim),
      transpose(qRot, dim, dim),
      transpose(kRot, kvDim, dim),
      transpose(wv, kvDim, dim),
    ],
    dim,
  );
}

/** [rows, cols] row-major -> [cols, rows]: nn.Linear [out, in] to MatMul [in, out]. */
export function transpose(w: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(w.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = w[r * cols + c];
  return out;
}

/** Side-by-side concatenation of row-major matrices that all have `rows` rows. */
export function concatColumns(parts: readonly Float32Array[], rows: number): Float32Array {
  const widths = parts.map((p) => p.length / rows);
  const total = widths.reduce((a, b) => a + b, 0);
  const out = new Float32Array(rows * total);
  for (let r = 0; r < rows; r++) {
    let at = r * total;
    parts.forEach((p, i) => {
      out.set(p.subarray(r * widths[i], (r + 1) * widths[i]), at);
      at += widths[i];
    });
  }
  return out;
}
