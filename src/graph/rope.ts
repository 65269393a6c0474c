/**
 * RoPE helpers. llama2.c rotates adjacent pairs (x[2i], x[2i+1]) by angle pos * f_i; Hugging
 * Face Llama rotates the two halves of a head (x[i], x[i + d/2]) instead. Reordering each
 * head's q/k output rows as [0, 2, 4, ..., 1, 3, 5, ...] turns one into the other (what HF's
 * convert_llama_weights_to_hf.py does); attention scores are unchanged because q and k get
 * the same reordering.
 */

/** Source row (within a head) of HF row j: HF's first half holds the even llama2.c rows. */
export function hfRowSource(j: number, headDim: number): number {
  const half = headDim / 2;
  return j < half ? 2 * j : 2 * (j - half) + 1;
}

/** Reorders the output rows of a [nHeads * headDim, inDim] weight head by head. */
export function permuteRowsForHfRope(w: Float32Array, nHeads: number, headDim: number, inDim: number): Float32Array {
  const out = new Float32Array(w.length);
  for (let h = 0; h < nHeads; h++) {
    for (let j = 0; j < headDim; j++) {
      const src = (h * headDim + hfRowSource(j, headDim)) * inDim;
      out.set(w.subarray(src, src + inDim), (h * headDim + j) * inDim);
    }
  }
  return out;
}

/**
 * Rows of rotate_half(W x) for an HF-ordered [nHeads * headDim, inDim] weight:
 * rotate_half(y) = concat(-y[half:], y[:half]) per head, a fixed linear map, so it can be
 * applied to the weight once instead of as Slice/Neg/Concat nodes on every step.
 */
export function rotateHalfRows(w: Float32Array, nHeads: number, headDim: number, inDim: number): Float32Array {
  const half = headDim / 2;
  const out = new Float32Array(w.length);
  for (let h = 0; h < nHeads; h++) {
    for (let j = 0; j < headDim; j++) {
      const srcRow = h * headDim + (j < half ? j + half : j - half);
      const sign = j < half ? -1 : 1;
      const dst = (h * headDim + j) * inDim;
      for (let c = 0; c < inDim; c++) out[dst + c] = sign * w[srcRow * inDim + c];
    }
  }
  return out;
}

/**
 * HF-layout cos/sin tables [seqLen, headDim] (each angle repeated in both halves) from
 * llama2.c's freq_cis tables [seqLen, headDim / 2], reusing the file's exact values.
 */
export function hfRopeTables(
  freqCisReal: Float32Array,
  freqCisImag: Float32Array,
  seqLen: number,
  headDim: number,
): { cos: Float32Array; sin: Float32Array } {
  const half = headDim / 2;
  const cos = new Float32Array(seqLen * headDim);
  const sin = new Float32Array(seqLen * headDim);
  for (let p = 0; p < seqLen; p++) {
    for (let i = 0; i < half; i++) {
      const c = freqCisReal[p * half + i];
      const s = freqCisImag[p * half + i];
      cos[p * headDim + i] = cos[p * headDim + i + half] = c;
      sin[p * headDim + i] = sin[p * headDim + i + half] = s;
    }
  }
  return { cos, sin };
}

/**
 * Recovers rope_theta from the stored table (angle of pair i at position 1 is
 * theta^(-2i/headDim)) and checks every entry against it; throws if the table is not a
 * standard RoPE table, since config.json could not describe it.
 */
export function inferRopeTheta(
  freqCisReal: Float32Array,
  freqCisImag: Float32Array,
  seqLen: number,
  headDim: number,
): number {
  const half = headDim / 2;
  if (seqLen < 2 || half < 2) throw new Error('RoPE table too small to infer rope_theta');
  // Pair 1 at position 1: angle = theta^(-2/headDim).
  const angle = Math.atan2(freqCisImag[half + 1], freqCisReal[half + 1]);
  const estimate = Math.pow(angle, -headDim / 2);
  // Published models use round thetas (10000, 500000, ...); float32 storage blurs the estimate.
  const theta = Number(estimate.toPrecision(4));
  for (let p = 0; p < seqLen; p++) {
    for (let i = 0; i < half; i++) {
      const expected = p * Math.pow(theta, (-2 * i) / headDim);
      const re = freqCisReal[p * half + i];
      const im = freqCisImag[p * half + i];
      if (Math.abs(re - Math.cos(expected)) > 1e-4 || Math.abs(im - Math.sin(expected)) > 1e-4) {
        throw new Error(
          `freq_cis table does not match rope_theta ${theta} at position ${p}, pair ${i}`,
        );
      }
    }
  }
  return theta;
}
