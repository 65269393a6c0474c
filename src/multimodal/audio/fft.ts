/**
 * A complex discrete Fourier transform of any size, by mixed-radix Cooley–Tukey over the
 * size's prime factors. Whisper's n_fft is 400 (2⁴ · 5²), not a power of two, so a radix-2
 * FFT does not fit; a direct DFT would cost ~20× more per frame.
 */
export class Fft {
  /** cos / −sin of 2πk/size: the twiddle W^k = exp(−2πik/size). */
  private readonly cos: Float64Array;
  private readonly sin: Float64Array;
  private readonly factors: number[];
  private readonly scratchRe: Float64Array;
  private readonly scratchIm: Float64Array;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`FFT size must be a positive integer, got ${size}`);
    this.cos = new Float64Array(size);
    this.sin = new Float64Array(size);
    for (let k = 0; k < size; k++) {
      this.cos[k] = Math.cos((2 * Math.PI * k) / size);
      this.sin[k] = -Math.sin((2 * Math.PI * k) / size);
    }
    this.factors = [];
    let rest = size;
    for (let p = 2; rest > 1; p++) {
      while (rest % p === 0) {
        this.factors.push(p);
        rest /= p;
      }
      if (p * p > rest && rest > 1) {
        this.factors.push(rest);
        rest = 1;
      }
    }
    const largest = Math.max(1, ...this.factors);
    this.scratchRe = new Float64Array(largest);
    this.scratchIm = new Float64Array(largest);
  }

  /** out = DFT(in); the arrays hold `size` values and must not alias. */
  transform(inRe: Float64Array, inIm: Float64Array, outRe: Float64Array, outIm: Float64Array): void {
    this.step(inRe, inIm, 0, 1, this.size, outRe, outIm, 0, 0);
  }

  private step(
    inRe: Float64Array,
    inIm: Float64Array,
    inOffset: number,
    stride: number,
    n: number,
    outRe: Float64Array,
    outIm: Float64Array,
    outOffset: number,
    level: number,
  ): void {
    if (n === 1) {
      outRe[outOffset] = inRe[inOffset];
      outIm[outOffset] = inIm[inOffset];
      return;
    }
    const p = this.factors[level];
    const m = n / p;
    // p interleaved sub-sequences, each transformed into its own block of m outputs.
    for (let q = 0; q < p; q++) this.step(inRe, inIm, inOffset + q * stride, stride * p, m, outRe, outIm, outOffset + q * m, level + 1);
    const { cos, sin, scratchRe, scratchIm, size } = this;
    const twiddleStep = size / n;
    const rootStep = size / p;
    for (let k = 0; k < m; k++) {
      // y_q = W_n^(qk) · Y_q[k]
      for (let q = 0; q < p; q++) {
        const index = outOffset + q * m + k;
        const w = (q * k * twiddleStep) % size;
        const re = outRe[index];
        const im = outIm[index];
        scratchRe[q] = re * cos[w] - im * sin[w];
        scratchIm[q] = re * sin[w] + im * cos[w];
      }
      // X[k + s·m] = Σ_q y_q · W_p^(qs)
      for (let s = 0; s < p; s++) {
        let re = 0;
        let im = 0;
        for (let q = 0; q < p; q++) {
          const w = ((q * s) % p) * rootStep;
          re += scratchRe[q] * cos[w] - scratchIm[q] * sin[w];
          im += scratchRe[q] * sin[w] + scratchIm[q] * cos[w];
        }
        outRe[outOffset + k + s * m] = re;
        outIm[outOffset + k + s * m] = im;
      }
    }
  }
}
