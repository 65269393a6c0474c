/**
 * Test oracle: a plain TypeScript forward pass with llama2.c's run.c semantics, straight from
 * the checkpoint: adjacent-pair RoPE from the file's freq_cis tables, no weight permutation,
 * no fusion. One sequence, one token per call, with its own KV cache.
 */
import type { DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';

const EPS = 1e-5;

export class Llama2cReference {
  private readonly keyCache: Float32Array[];
  private readonly valueCache: Float32Array[];

  constructor(private readonly ckpt: DecoderCheckpoint) {
    const { nLayers, seqLen } = ckpt.header;
    this.keyCache = Array.from({ length: nLayers }, () => new Float32Array(seqLen * ckpt.kvDim));
    this.valueCache = Array.from({ length: nLayers }, () => new Float32Array(seqLen * ckpt.kvDim));
  }

  /** Logits after feeding `token` at position `pos` (positions 0..pos-1 must already be fed). */
  forward(token: number, pos: number): Float32Array {
    const { header, headDim, kvDim } = this.ckpt;
    const { dim, hiddenDim, nHeads, nKvHeads, vocabSize } = header;
    const kvMul = nHeads / nKvHeads;
    const x = Float32Array.from(this.ckpt.tokenEmbedding.subarray(token * dim, (token + 1) * dim));

    this.ckpt.layers.forEach((layer, l) => {
      const xb = rmsNorm(x, layer.rmsAtt);
      const q = matVec(layer.wq, xb, dim, dim);
      const k = matVec(layer.wk, xb, kvDim, dim);
      const v = matVec(layer.wv, xb, kvDim, dim);
      this.rotateAdjacentPairs(q, pos);
      this.rotateAdjacentPairs(k, pos);
      this.keyCache[l].set(k, pos * kvDim);
      this.valueCache[l].set(v, pos * kvDim);

      const attended = new Float32Array(dim);
      for (let h = 0; h < nHeads; h++) {
        const kvOffset = Math.floor(h / kvMul) * headDim;
        const scores = new Float64Array(pos + 1);
        for (let t = 0; t <= pos; t++) {
          let s = 0;
          for (let i = 0; i < headDim; i++) s += q[h * headDim + i] * this.keyCache[l][t * kvDim + kvOffset + i];
          scores[t] = s / Math.sqrt(headDim);
        }
        softmaxInPlace(scores);
        for (let t = 0; t <= pos; t++) {
          for (let i = 0; i < headDim; i++) {
            attended[h * headDim + i] += scores[t] * this.valueCache[l][t * kvDim + kvOffset + i];
          }
        }
      }
      addInPlace(x, matVec(layer.wo, attended, dim, dim));

      const xf = rmsNorm(x, layer.rmsFfn);
      const gate = matVec(layer.w1, xf, hiddenDim, dim);
      const up = matVec(layer.w3, xf, hiddenDim, dim);
      for (let i = 0; i < hiddenDim; i++) gate[i] = (gate[i] / (1 + Math.exp(-gate[i]))) * up[i];
      addInPlace(x, matVec(layer.w2, gate, dim, hiddenDim));
    });

    return matVec(this.ckpt.classifier, rmsNorm(x, this.ckpt.rmsFinal), vocabSize, dim);
  }

  /** Logits for every position of `tokens`, fed from position 0 of a fresh cache. */
  static prefill(ckpt: DecoderCheckpoint, tokens: readonly number[]): Float32Array[] {
    const model = new Llama2cReference(ckpt);
    return tokens.map((t, pos) => model.forward(t, pos));
  }

  /** run.c's RoPE: pair (2i, 2i+1) of each head rotated by the stored angle of pair i. */
  private rotateAdjacentPairs(vec: Float32Array, pos: number): void {
    const half = this.ckpt.headDim / 2;
    for (let j = 0; j < vec.length; j += 2) {
      const pair = (j % this.ckpt.headDim) / 2;
      const cos = this.ckpt.freqCisReal[pos * half + pair];
      const sin = this.ckpt.freqCisImag[pos * half + pair];
      const a = vec[j];
      const b = vec[j + 1];
      vec[j] = a * cos - b * sin;
      vec[j + 1] = a * sin + b * cos;
    }
  }
}

/** The greedy continuation of `prompt` (`count` tokens) by a fresh reference model of `ckpt`. */
export function referenceGreedyIds(ckpt: DecoderCheckpoint, prompt: readonly number[], count: number): number[] {
  const model = new Llama2cReference(ckpt);
  let logits: Float32Array = new Float32Array(0);
  prompt.forEach((token, pos) => (logits = model.forward(token, pos)));
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    out.push(argmax(logits));
    if (i + 1 < count) logits = model.forward(out[i], prompt.length + i);
  }
  return out;
}

export function argmax(values: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
  return best;
}

function rmsNorm(x: Float32Array, weight: Float32Array): Float32Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const scale = 1 / Math.sqrt(ss / x.length + EPS);
  return x.map((v, i) => weight[i] * v * scale);
}

/** W [rows, cols] row-major times x [cols]. */
function matVec(w: Float32Array, x: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let c = 0; c < cols; c++) s += w[r * cols + c] * x[c];
    out[r] = s;
  }
  return out;
}

function softmaxInPlace(v: Float64Array): void {
  const max = Math.max(...v);
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i] = Math.exp(v[i] - max);
  for (let i = 0; i < v.length; i++) v[i] /= sum;
}

function addInPlace(x: Float32Array, y: Float32Array): void {
  for (let i = 0; i < x.length; i++) x[i] += y[i];
}
