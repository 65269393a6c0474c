import { describe, expect, it } from 'vitest';
import { hfRopeTables, inferRopeTheta, permuteRowsForHfRope, rotateHalfRows } from '../../src/graph/rope.js';

const HEAD_DIM = 8;
const HEADS = 2;

/** llama2.c: rotate adjacent pairs of each head by angle pos * theta^(-2i/d). */
function llama2cRope(x: number[], pos: number, theta: number): number[] {
  const out = [...x];
  for (let j = 0; j < x.length; j += 2) {
    const i = (j % HEAD_DIM) / 2;
    const a = pos * theta ** ((-2 * i) / HEAD_DIM);
    out[j] = x[j] * Math.cos(a) - x[j + 1] * Math.sin(a);
    out[j + 1] = x[j] * Math.sin(a) + x[j + 1] * Math.cos(a);
  }
  return out;
}

/** Hugging Face: x * cos + rotate_half(x) * sin with angles repeated over both halves. */
function hfRope(x: number[], pos: number, theta: number): number[] {
  const half = HEAD_DIM / 2;
  return x.map((v, j) => {
    const d = j % HEAD_DIM;
    const i = d % half;
    const a = pos * theta ** ((-2 * i) / HEAD_DIM);
    const rotated = d < half ? -x[j + half] : x[j - half];
    return v * Math.cos(a) + rotated * Math.sin(a);
  });
}

function freqCis(seqLen: number, theta: number) {
  const half = HEAD_DIM / 2;
  const re = new Float32Array(seqLen * half);
  const im = new Float32Array(seqLen * half);
  for (let p = 0; p < seqLen; p++) {
    for (let i = 0; i < half; i++) {
      const a = p * theta ** ((-2 * i) / HEAD_DIM);
      re[p * half + i] = Math.cos(a);
      im[p * half + i] = Math.sin(a);
    }
  }
  return { re, im };
}

// A [HEADS * HEAD_DIM, 1] "weight" is just a vector, so row operations act on its entries.
const vector = Array.from({ length: HEADS * HEAD_DIM }, (_, i) => Math.sin(3.7 * i + 1));

describe('RoPE conversion', () => {
  it('HF rotate_half RoPE of the permuted rows equals the permuted llama2.c RoPE', () => {
    const permuted = Array.from(permuteRowsForHfRope(Float32Array.from(vector), HEADS, HEAD_DIM, 1));
    for (const pos of [0, 1, 7, 300]) {
      const rotated = Float32Array.from(llama2cRope(vector, pos, 10000));
      const viaLlama = Array.from(permuteRowsForHfRope(rotated, HEADS, HEAD_DIM, 1));
      const viaHf = hfRope(permuted, pos, 10000);
      viaHf.forEach((v, i) => expect(v).toBeCloseTo(viaLlama[i], 5));
    }
  });

  it('keeps dot products (attention scores) between rotated q and k', () => {
    const k = vector.map((v) => v * 0.5 + 0.1);
    const dot = (a: number[], b: number[]) => a.reduce((s, v, i) => s + v * b[i], 0);
    const p = (x: number[]) => Array.from(permuteRowsForHfRope(Float32Array.from(x), HEADS, HEAD_DIM, 1));
    expect(dot(hfRope(p(vector), 9, 10000), hfRope(p(k), 4, 10000))).toBeCloseTo(
      dot(llama2cRope(vector, 9, 10000), llama2cRope(k, 4, 10000)),
      5,
    );
  });

  it('rotateHalfRows computes rotate_half per head', () => {
    const rotated = Array.from(rotateHalfRows(Float32Array.from(vector), HEADS, HEAD_DIM, 1));
    const expected = vector.map((_, j) => (j % HEAD_DIM < 4 ? -vector[j + 4] : vector[j - 4]));
    rotated.forEach((v, i) => expect(v).toBeCloseTo(expected[i], 6));
  });

  it('builds HF cos/sin tables that repeat each angle over both halves', () => {
    const { re, im } = freqCis(3, 10000);
    const { cos, sin } = hfRopeTables(re, im, 3, HEAD_DIM);
    const a = 2 * 10000 ** (-2 / HEAD_DIM); // position 2, pair 1
    expect(cos[2 * HEAD_DIM + 1]).toBeCloseTo(Math.cos(a), 6);
    expect(cos[2 * HEAD_DIM + 5]).toBeCloseTo(Math.cos(a), 6);
    expect(sin[2 * HEAD_DIM + 5]).toBeCloseTo(Math.sin(a), 6);
  });

  it.each([10000, 500000])('infers rope_theta %d from a freq_cis table', (theta) => {
    const { re, im } = freqCis(512, theta);
    expect(inferRopeTheta(re, im, 512, HEAD_DIM)).toBe(theta);
  });

  it('refuses a table that is not standard RoPE', () => {
    const { re, im } = freqCis(64, 10000);
    im[40 * 4 + 2] += 0.01;
    expect(() => inferRopeTheta(re, im, 64, HEAD_DIM)).toThrow(/position 40, pair 2/);
  });
});
