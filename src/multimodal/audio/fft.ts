/**
 * A complex discrete Fourier transform of any size, by mixed-radix Cooley–Tukey over the
 * size's prime factors (decimation in time). Whisper's n_fft is 400 (2⁴ · 5²), not a power
 * of two, so a radix-2 FFT does not fit; a direct DFT would cost ~20× more per frame.
 * Twiddles are tabled per level, so a transform does no trigonometry and no modulo.
 */
interface Level {
  /** Radix of this level and the size of each sub-transform below it. */
  p: number;
  m: number;
  /** W_n^(q·k) for q < p, k < m: [q * m + k]. */
  twiddleRe: Float64Array;
  twiddleIm: Float64Array;
}

export class Fft {
  private readonly levels: Level[] = [];
  /** W_p^j for the radices: roots[p][j]. */
  private readonly rootsRe = new Map<number, Float64Array>();
  private readonly rootsIm = new Map<number, Float64Array>();
  private readonly scratchRe: Float64Array;
  private readonly scratchIm: Float64Array;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`FFT size must be a positive integer, got ${size}`);
    const factors: number[] = [];
    let rest = size;
    for (let p = 2; p * p <= rest; p++) {
      while (rest % p === 0) {
        factors.push(p);
        rest /= p;
      }
    }
    if (rest > 1) factors.push(rest);
    let n = size;
    for (const p of factors) {
      const m = n / p;
      const twiddleRe = new Float64Array(p * m);
      const twiddleIm = new Float64Array(p * m);
      for (let q = 0; q < p; q++) {
        for (let k = 0; k < m; k++) {
          const angle = (-2 * Math.PI * q * k) / n;
          twiddleRe[q * m + k] = Math.cos(angle);
          twiddleIm[q * m + k] = Math.sin(angle);
        }
      }
      this.levels.push({ p, m, twiddleRe, twiddleIm });
      if (!this.rootsRe.has(p)) {
        this.rootsRe.set(p, Float64Array.from({ length: p }, (_, j) => Math.cos((-2 * Math.PI * j) / p)));
        this.rootsIm.set(p, Float64Array.from({ length: p }, (_, j) => Math.sin((-2 * Math.PI * j) / p)));
      }
      n = m;
    }
    const largest = Math.max(1, ...factors);
    this.scratchRe = new Float64Array(largest);
    this.scratchIm = new Float64Array(largest);
  }

  /** out = DFT(in); the arrays hold `size` values and must not alias. */
  transform(inRe: Float64Array, inIm: Float64Array, outRe: Float64Array, outIm: Float64Array): void {
    if (this.size === 1) {
      outRe[0] = inRe[0];
      outIm[0] = inIm[0];
      return;
    }
    this.step(inRe, inIm, 0, 1, outRe, outIm, 0, 0);
  }

  private step(inRe: Float64Array, inIm: Float64Array, inOffset: number, stride: number, outRe: Float64Array, outIm: Float64Array, outOffset: number, level: number): void {
    const { p, m, twiddleRe, twiddleIm } = this.levels[level];
    const rootRe = this.rootsRe.get(p)!;
    const rootIm = this.rootsIm.get(p)!;
    const { scratchRe, scratchIm } = this;
    if (m === 1) {
      // The last level: a direct DFT of p inputs.
      for (let q = 0; q < p; q++) {
        scratchRe[q] = inRe[inOffset + q * stride];
        scratchIm[q] = inIm[inOffset + q * stride];
      }
      this.butterfly(p, rootRe, rootIm, outRe, outIm, outOffset, 1);
      return;
    }
    for (let q = 0; q < p; q++) this.step(inRe, inIm, inOffset + q * stride, stride * p, outRe, outIm, outOffset + q * m, level + 1);
    for (let k = 0; k < m; k++) {
      for (let q = 0; q < p; q++) {
        const index = outOffset + q * m + k;
        const wr = twiddleRe[q * m + k];
        const wi = twiddleIm[q * m + k];
        const re = outRe[index];
        const im = outIm[index];
        scratchRe[q] = re * wr - im * wi;
        scratchIm[q] = re * wi + im * wr;
      }
      this.butterfly(p, rootRe, rootIm, outRe, outIm, outOffset + k, m);
    }
  }

  /** out[offset + s·spacing] = Σ_q scratch[q] · W_p^(q·s). */
  private butterfly(p: number, rootRe: Float64Array, rootIm: Float64Array, outRe: Float64Array, outIm: Float64Array, offset: number, spacing: number): void {
    const { scratchRe, scratchIm } = this;
    if (p === 2) {
      outRe[offset] = scratchRe[0] + scratchRe[1];
      outIm[offset] = scratchIm[0] + scratchIm[1];
      outRe[offset + spacing] = scratchRe[0] - scratchRe[1];
      outIm[offset + spacing] = scratchIm[0] - scratchIm[1];
      return;
    }
    for (let s = 0; s < p; s++) {
      let re = 0;
      let im = 0;
      let j = 0;
      for (let q = 0; q < p; q++) {
        re += scratchRe[q] * rootRe[j] - scratchIm[q] * rootIm[j];
        im += scratchRe[q] * rootIm[j] + scratchIm[q] * rootRe[j];
        j += s;
        if (j >= p) j -= p;
      }
      outRe[offset + s * spacing] = re;
      outIm[offset + s * spacing] = im;
    }
  }
}

/**
 * The spectrum of a real signal of even length n, bins 0..n/2, by one complex FFT of
 * n/2 points over the even and odd samples packed as real and imaginary parts (half the
 * work of a complex transform of n points).
 */
export class RealFft {
  private readonly half: Fft;
  private readonly packedRe: Float64Array;
  private readonly packedIm: Float64Array;
  private readonly spectrumRe: Float64Array;
  private readonly spectrumIm: Float64Array;
  /** W_n^k for k ≤ n/2. */
  private readonly twiddleRe: Float64Array;
  private readonly twiddleIm: Float64Array;

  constructor(readonly size: number) {
    if (size % 2 !== 0 || size < 2) throw new Error(`a real FFT needs an even size, got ${size}`);
    const half = size / 2;
    this.half = new Fft(half);
    this.packedRe = new Float64Array(half);
    this.packedIm = new Float64Array(half);
    this.spectrumRe = new Float64Array(half);
    this.spectrumIm = new Float64Array(half);
    this.twiddleRe = Float64Array.from({ length: half + 1 }, (_, k) => Math.cos((-2 * Math.PI * k) / size));
    this.twiddleIm = Float64Array.from({ length: half + 1 }, (_, k) => Math.sin((-2 * Math.PI * k) / size));
  }

  /** outRe / outIm (n/2 + 1 values each) = bins 0..n/2 of DFT(input). */
  transform(input: Float64Array, outRe: Float64Array, outIm: Float64Array): void {
    const half = this.size / 2;
    const { packedRe, packedIm, spectrumRe: zr, spectrumIm: zi, twiddleRe, twiddleIm } = this;
    for (let j = 0; j < half; j++) {
      packedRe[j] = input[2 * j];
      packedIm[j] = input[2 * j + 1];
    }
    this.half.transform(packedRe, packedIm, zr, zi);
    for (let k = 0; k <= half; k++) {
      const a = k % half;
      const b = (half - k) % half;
      // Even part E = (Z[k] + conj(Z[half − k])) / 2, odd part O = (Z[k] − conj(Z[half − k])) / 2i.
      const er = (zr[a] + zr[b]) / 2;
      const ei = (zi[a] - zi[b]) / 2;
      const or = (zi[a] + zi[b]) / 2;
      const oi = -(zr[a] - zr[b]) / 2;
      outRe[k] = er + twiddleRe[k] * or - twiddleIm[k] * oi;
      outIm[k] = ei + twiddleRe[k] * oi + twiddleIm[k] * or;
    }
  }
}
