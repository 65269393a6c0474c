/**
 * ggml's IQ2 / IQ3 / IQ1 types (the "i-quants" of llama-quantize): each group of 8 (or 4)
 * elements is one entry of a fixed grid of magnitudes (src/gguf/iq-grids.ts, ggml's tables
 * as data) with a sign pattern, times a per-sub-block scale; IQ1's entries are -1, 0, 1
 * shifted by ±1/8. Dequantized as ggml's dequantize_row_iq* computes them, every float32
 * rounding in its order (checked bit for bit against ggml's own functions in
 * test/gguf/dequantize.test.ts).
 *
 * Every element is also scale * t with t a small integer (the grid value with its sign;
 * IQ1: 8 (g ± 1/8) with scale / 8, exact since 8 is a power of two), so the block forms
 * below let quantized-weights.ts keep these weights as 8-bit codes.
 */
import { iq1sGridBase64, iq2sGridBase64, iq2xsGridBase64, iq2xxsGridBase64, iq3sGridBase64, iq3xxsGridBase64, ksignsIq2xsBase64 } from './iq-grids.js';

type Half = (bytes: Uint8Array, at: number) => number;
/** ggml-types.ts' Dequantizer and BlockForm (spelled out here: ggml-types imports this file). */
type Dequantizer = (blocks: Uint8Array, out: Float32Array) => void;
type BlockForm = (blocks: Uint8Array, scale: Float32Array, min: Float32Array) => void;

function bytesOf(base64: string): Uint8Array {
  const text = atob(base64);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

/** The tables, decoded when a file first needs one. */
let tables: { iq2xxs: Uint8Array; iq2xs: Uint8Array; iq2s: Uint8Array; iq3xxs: Uint8Array; iq3s: Uint8Array; iq1s: Int8Array; ksigns: Uint8Array } | undefined;
function grids() {
  tables ??= {
    iq2xxs: bytesOf(iq2xxsGridBase64),
    iq2xs: bytesOf(iq2xsGridBase64),
    iq2s: bytesOf(iq2sGridBase64),
    iq3xxs: bytesOf(iq3xxsGridBase64),
    iq3s: bytesOf(iq3sGridBase64),
    iq1s: new Int8Array(bytesOf(iq1sGridBase64).buffer),
    ksigns: bytesOf(ksignsIq2xsBase64),
  };
  return tables;
}

const u16 = (b: Uint8Array, at: number) => b[at] | (b[at + 1] << 8);
const u32 = (b: Uint8Array, at: number) => (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0;
const sign = (signs: number, j: number) => (signs & (1 << j) ? -1 : 1);

/**
 * Calls `each(element, scale, t)` for every element of one 256-element block at `at`, where
 * the element's float32 value is round32(scale * t) (t an integer); the dequantizers and the
 * block forms are both this walk, so they cannot disagree on layouts.
 */
type Walk = (blocks: Uint8Array, at: number, half: Half, each: (element: number, scale: number, t: number) => void) => void;

/** block_iq2_xxs (66 bytes): f16 d, then per 32: 4 grid indices (8 bits), 4 × 7-bit sign indices and a 4-bit scale in a u32. */
const iq2xxsWalk: Walk = (blocks, at, half, each) => {
  const { iq2xxs, ksigns } = grids();
  const d = half(blocks, at);
  for (let ib = 0; ib < 8; ib++) {
    const q = at + 2 + 8 * ib;
    const aux1 = u32(blocks, q + 4);
    const db = Math.fround(Math.fround(d * Math.fround(0.5 + (aux1 >>> 28))) * 0.25);
    for (let l = 0; l < 4; l++) {
      const grid = blocks[q + l] * 8;
      const signs = ksigns[(aux1 >>> (7 * l)) & 127];
      for (let j = 0; j < 8; j++) each(ib * 32 + l * 8 + j, db, iq2xxs[grid + j] * sign(signs, j));
    }
  }
};

/** block_iq2_xs (74 bytes): f16 d, 32 u16 (9-bit grid index, 7-bit sign index), 8 bytes of two 4-bit scales. */
const iq2xsWalk: Walk = (blocks, at, half, each) => {
  const { iq2xs, ksigns } = grids();
  const d = half(blocks, at);
  for (let ib = 0; ib < 8; ib++) {
    const scales = blocks[at + 66 + ib];
    const db = [Math.fround(Math.fround(d * (0.5 + (scales & 0xf))) * 0.25), Math.fround(Math.fround(d * (0.5 + (scales >> 4))) * 0.25)];
    for (let l = 0; l < 4; l++) {
      const q = u16(blocks, at + 2 + 2 * (4 * ib + l));
      const grid = (q & 511) * 8;
      const signs = ksigns[q >> 9];
      for (let j = 0; j < 8; j++) each(ib * 32 + l * 8 + j, db[l >> 1], iq2xs[grid + j] * sign(signs, j));
    }
  }
};

/** block_iq2_s (82 bytes): f16 d, qs[32] grid index low bits, signs[32], qh[8] (2 high bits per 8), scales[8]. */
const iq2sWalk: Walk = (blocks, at, half, each) => {
  const { iq2s } = grids();
  const d = half(blocks, at);
  for (let ib = 0; ib < 8; ib++) {
    const scales = blocks[at + 74 + ib];
    const db = [Math.fround(Math.fround(d * (0.5 + (scales & 0xf))) * 0.25), Math.fround(Math.fround(d * (0.5 + (scales >> 4))) * 0.25)];
    const qh = blocks[at + 66 + ib];
    for (let l = 0; l < 4; l++) {
      const grid = (blocks[at + 2 + 4 * ib + l] | ((qh << (8 - 2 * l)) & 0x300)) * 8;
      const signs = blocks[at + 34 + 4 * ib + l];
      for (let j = 0; j < 8; j++) each(ib * 32 + l * 8 + j, db[l >> 1], iq2s[grid + j] * sign(signs, j));
    }
  }
};

/** block_iq3_xxs (98 bytes): f16 d, 64 grid indices (4 values each), then per 32 a u32 of 4 × 7-bit sign indices and a 4-bit scale. */
const iq3xxsWalk: Walk = (blocks, at, half, each) => {
  const { iq3xxs, ksigns } = grids();
  const d = half(blocks, at);
  for (let ib = 0; ib < 8; ib++) {
    const aux = u32(blocks, at + 66 + 4 * ib);
    const db = Math.fround(Math.fround(d * (0.5 + (aux >>> 28))) * 0.5);
    for (let l = 0; l < 4; l++) {
      const signs = ksigns[(aux >>> (7 * l)) & 127];
      const grid1 = blocks[at + 2 + 8 * ib + 2 * l] * 4;
      const grid2 = blocks[at + 2 + 8 * ib + 2 * l + 1] * 4;
      for (let j = 0; j < 4; j++) {
        each(ib * 32 + l * 8 + j, db, iq3xxs[grid1 + j] * sign(signs, j));
        each(ib * 32 + l * 8 + j + 4, db, iq3xxs[grid2 + j] * sign(signs, j + 4));
      }
    }
  }
};

/** block_iq3_s (110 bytes): f16 d, qs[64] grid index low bits, qh[8] the ninth bits, signs[32], scales[4] (two 4-bit per 64). */
const iq3sWalk: Walk = (blocks, at, half, each) => {
  const { iq3s } = grids();
  const d = half(blocks, at);
  for (let ib = 0; ib < 8; ib++) {
    const scale = (blocks[at + 106 + (ib >> 1)] >> (4 * (ib & 1))) & 0xf;
    const db = d * (1 + 2 * scale);
    const qh = blocks[at + 66 + ib];
    for (let l = 0; l < 4; l++) {
      const qs = at + 2 + 8 * ib + 2 * l;
      const grid1 = (blocks[qs] | ((qh << (8 - 2 * l)) & 256)) * 4;
      const grid2 = (blocks[qs + 1] | ((qh << (7 - 2 * l)) & 256)) * 4;
      const signs = blocks[at + 74 + 4 * ib + l];
      for (let j = 0; j < 4; j++) {
        each(ib * 32 + l * 8 + j, db, iq3s[grid1 + j] * sign(signs, j));
        each(ib * 32 + l * 8 + j + 4, db, iq3s[grid2 + j] * sign(signs, j + 4));
      }
    }
  }
};

/** block_iq1_s (50 bytes): f16 d, qs[32] grid index low bits, qh[8] u16 (3 high bits per 8, a 3-bit scale, the delta's sign). */
const iq1sWalk: Walk = (blocks, at, half, each) => {
  const { iq1s } = grids();
  const d = half(blocks, at);
  for (let ib = 0; ib < 8; ib++) {
    const qh = u16(blocks, at + 34 + 2 * ib);
    const dl = d * (2 * ((qh >> 12) & 7) + 1);
    const delta8 = qh & 0x8000 ? -1 : 1;
    for (let l = 0; l < 4; l++) {
      const grid = (blocks[at + 2 + 4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)) * 8;
      // dl (g + delta) with delta = ±1/8: (dl / 8) (8 g ± 1), the same float32 product.
      for (let j = 0; j < 8; j++) each(ib * 32 + l * 8 + j, dl / 8, 8 * iq1s[grid + j] + delta8);
    }
  }
};

/** block_iq1_m (56 bytes): qs[32], qh[16] (3 high bits and the delta's sign per 8), scales[8]: 3-bit scales per 16 and the f16 d in their top nibbles. */
const iq1mWalk: Walk = (blocks, at, half, each) => {
  const { iq1s } = grids();
  const sc = (k: number) => u16(blocks, at + 48 + 2 * k);
  const bits = (sc(0) >> 12) | ((sc(1) >> 8) & 0x00f0) | ((sc(2) >> 4) & 0x0f00) | (sc(3) & 0xf000);
  const d = half(Uint8Array.of(bits & 0xff, bits >> 8), 0);
  for (let ib = 0; ib < 8; ib++) {
    const s = sc(ib >> 1);
    const dl = [d * (2 * ((s >> (6 * (ib & 1))) & 7) + 1), d * (2 * ((s >> (6 * (ib & 1) + 3)) & 7) + 1)];
    const qh0 = blocks[at + 32 + 2 * ib];
    const qh1 = blocks[at + 32 + 2 * ib + 1];
    const qs = at + 4 * ib;
    const idx = [blocks[qs] | ((qh0 << 8) & 0x700), blocks[qs + 1] | ((qh0 << 4) & 0x700), blocks[qs + 2] | ((qh1 << 8) & 0x700), blocks[qs + 3] | ((qh1 << 4) & 0x700)];
    const delta8 = [qh0 & 0x08 ? -1 : 1, qh0 & 0x80 ? -1 : 1, qh1 & 0x08 ? -1 : 1, qh1 & 0x80 ? -1 : 1];
    for (let l = 0; l < 4; l++) {
      for (let j = 0; j < 8; j++) each(ib * 32 + l * 8 + j, dl[l >> 1] / 8, 8 * iq1s[idx[l] * 8 + j] + delta8[l]);
    }
  }
};

export interface IqType {
  blockBytes: number;
  dequantize: Dequantizer;
  blockForm: BlockForm;
}

function iqType(blockBytes: number, walk: Walk, half: Half): IqType {
  return {
    blockBytes,
    dequantize: (blocks, out) => {
      for (let b = 0; b * 256 < out.length; b++) {
        walk(blocks, b * blockBytes, half, (element, scale, t) => {
          out[b * 256 + element] = Math.fround(scale * t);
        });
      }
    },
    blockForm: (blocks, scale, min) => {
      min.fill(0);
      for (let b = 0; b * 256 < scale.length; b++) {
        walk(blocks, b * blockBytes, half, (element, s) => {
          scale[b * 256 + element] = s;
        });
      }
    },
  };
}

/** The IQ types by ggml name, given ggml-types.ts' float16 reader. */
export function iqTypes(half: Half): Record<string, IqType> {
  return {
    IQ2_XXS: iqType(66, iq2xxsWalk, half),
    IQ2_XS: iqType(74, iq2xsWalk, half),
    IQ2_S: iqType(82, iq2sWalk, half),
    IQ3_XXS: iqType(98, iq3xxsWalk, half),
    IQ3_S: iqType(110, iq3sWalk, half),
    IQ1_S: iqType(50, iq1sWalk, half),
    IQ1_M: iqType(56, iq1mWalk, half),
  };
}
