/**
 * ggml's tensor types: block sizes (from ggml's type traits, as the `gguf` Python package
 * lists them) and, for the types this engine serves, dequantizers that give the very
 * float32 values ggml's dequantize_row_* gives (checked block by block against the `gguf`
 * package's dequantize in test/gguf/dequantize.test.ts).
 *
 * float32 arithmetic: every product or sum a ggml kernel rounds to float32 is rounded here
 * with Math.fround (one double operation on float32 operands, then rounded, equals the
 * float32 operation). Where a product is exact in float32 (a float16 scale times a 4-8 bit
 * integer), no rounding is needed and none is written.
 */
import { iqTypes } from './iq-quants.js';
import { float16ToFloat32 } from '../onnx/float16.js';

export type Dequantizer = (blocks: Uint8Array, out: Float32Array) => void;

export interface GgmlTypeInfo {
  id: number;
  name: string;
  blockSize: number;
  blockBytes: number;
  /** Undefined: a type the file format knows and this engine cannot execute. */
  dequantize?: Dequantizer;
  /** Quantized types: each element's block scale and block min (see BlockForm). */
  blockForm?: BlockForm;
}

/**
 * A quantized type as element = scale * t - min with t an integer (Q4_0's q - 8, Q8_0's
 * int8, Q6_K's q - 32, Q4_1/Q5_1/K-quants' q, min 0 where the type has none): writes every
 * element's scale and min, equal across one scale block (32 elements, Q6_K's 16). The
 * values are ggml's own float32 factors, so scale * t - min, rounded as ggml rounds, is the
 * dequantized element.
 */
export type BlockForm = (blocks: Uint8Array, scale: Float32Array, min: Float32Array) => void;

let halfTable: Float32Array | undefined;
function half(bytes: Uint8Array, at: number): number {
  halfTable ??= float16ToFloat32(Uint16Array.from({ length: 65536 }, (_, i) => i));
  return halfTable[bytes[at] | (bytes[at + 1] << 8)];
}

const f32: Dequantizer = (blocks, out) => {
  const view = new DataView(blocks.buffer, blocks.byteOffset, blocks.byteLength);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
};

const f16: Dequantizer = (blocks, out) => {
  for (let i = 0; i < out.length; i++) out[i] = half(blocks, i * 2);
};

const bf16Bits = new Uint32Array(1);
const bf16Float = new Float32Array(bf16Bits.buffer);
const bf16: Dequantizer = (blocks, out) => {
  for (let i = 0; i < out.length; i++) {
    bf16Bits[0] = ((blocks[i * 2] | (blocks[i * 2 + 1] << 8)) << 16) >>> 0;
    out[i] = bf16Float[0];
  }
};

/** block_q8_0: f16 d, 32 int8. */
const q8_0: Dequantizer = (blocks, out) => {
  for (let b = 0; b * 32 < out.length; b++) {
    const at = b * 34;
    const d = half(blocks, at);
    for (let j = 0; j < 32; j++) out[b * 32 + j] = d * ((blocks[at + 2 + j] << 24) >> 24);
  }
};

/** block_q4_0: f16 d, 16 bytes: low nibbles are elements 0..15, high nibbles 16..31; (q - 8) d. */
const q4_0: Dequantizer = (blocks, out) => {
  for (let b = 0; b * 32 < out.length; b++) {
    const at = b * 18;
    const d = half(blocks, at);
    for (let j = 0; j < 16; j++) {
      const byte = blocks[at + 2 + j];
      out[b * 32 + j] = ((byte & 0xf) - 8) * d;
      out[b * 32 + j + 16] = ((byte >> 4) - 8) * d;
    }
  }
};

/** block_q4_1: f16 d, f16 m, 16 bytes as Q4_0; q d + m. */
const q4_1: Dequantizer = (blocks, out) => {
  for (let b = 0; b * 32 < out.length; b++) {
    const at = b * 20;
    const d = half(blocks, at);
    const m = half(blocks, at + 2);
    for (let j = 0; j < 16; j++) {
      const byte = blocks[at + 4 + j];
      out[b * 32 + j] = (byte & 0xf) * d + m;
      out[b * 32 + j + 16] = (byte >> 4) * d + m;
    }
  }
};

/** block_q5_0 / q5_1: f16 d (, f16 m), u32 qh (the fifth bits), 16 bytes as Q4_0. */
function q5(withMin: boolean): Dequantizer {
  const bytes = withMin ? 24 : 22;
  const qhAt = withMin ? 4 : 2;
  return (blocks, out) => {
    for (let b = 0; b * 32 < out.length; b++) {
      const at = b * bytes;
      const d = half(blocks, at);
      const m = withMin ? half(blocks, at + 2) : 0;
      const qh = (blocks[at + qhAt] | (blocks[at + qhAt + 1] << 8) | (blocks[at + qhAt + 2] << 16) | (blocks[at + qhAt + 3] << 24)) >>> 0;
      for (let j = 0; j < 16; j++) {
        const byte = blocks[at + qhAt + 4 + j];
        const low = (byte & 0xf) | (((qh >>> j) << 4) & 0x10);
        const high = (byte >> 4) | ((qh >>> (j + 12)) & 0x10);
        out[b * 32 + j] = withMin ? low * d + m : (low - 16) * d;
        out[b * 32 + j + 16] = withMin ? high * d + m : (high - 16) * d;
      }
    }
  };
}

/** The 6-bit scale and min of sub-block j from K-quants' 12 packed bytes at `at` (ggml's get_scale_min_k4). */
function scaleMinK4(blocks: Uint8Array, at: number, j: number): [number, number] {
  if (j < 4) return [blocks[at + j] & 63, blocks[at + j + 4] & 63];
  return [
    (blocks[at + j + 4] & 0xf) | ((blocks[at + j - 4] >> 6) << 4),
    (blocks[at + j + 4] >> 4) | ((blocks[at + j] >> 6) << 4),
  ];
}

/**
 * block_q4_K (256 elements, 144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scales and
 * mins for 8 sub-blocks of 32, 128 bytes of nibbles (each 32 bytes: a sub-block in the low
 * nibbles, the next in the high ones); element = (d sc) q - (dmin m).
 * block_q5_K (176 bytes): the same plus qh[32], bit i of qh[l] the fifth bit of sub-block i.
 */
function kQuant(fiveBits: boolean): Dequantizer {
  const bytes = fiveBits ? 176 : 144;
  const qsAt = fiveBits ? 48 : 16;
  return (blocks, out) => {
    for (let b = 0; b * 256 < out.length; b++) {
      const at = b * bytes;
      const d = half(blocks, at);
      const dmin = half(blocks, at + 2);
      for (let group = 0; group < 4; group++) {
        const [sc1, m1] = scaleMinK4(blocks, at + 4, 2 * group);
        const [sc2, m2] = scaleMinK4(blocks, at + 4, 2 * group + 1);
        const d1 = d * sc1;
        const min1 = dmin * m1;
        const d2 = d * sc2;
        const min2 = dmin * m2;
        const base = b * 256 + group * 64;
        for (let l = 0; l < 32; l++) {
          const byte = blocks[at + qsAt + group * 32 + l];
          let low = byte & 0xf;
          let high = byte >> 4;
          if (fiveBits) {
            const qh = blocks[at + 16 + l];
            low |= ((qh >> (2 * group)) & 1) << 4;
            high |= ((qh >> (2 * group + 1)) & 1) << 4;
          }
          out[base + l] = d1 * low - min1;
          out[base + 32 + l] = d2 * high - min2;
        }
      }
    }
  };
}

/**
 * block_q6_K (256 elements, 210 bytes): ql[128] low nibbles, qh[64] high 2 bits, 16 int8
 * scales (one per 16 elements), f16 d; element = round32(d scale) (q - 32), rounded.
 */
const q6_K: Dequantizer = (blocks, out) => {
  for (let b = 0; b * 256 < out.length; b++) {
    const at = b * 210;
    const d = half(blocks, at + 208);
    for (let halfBlock = 0; halfBlock < 2; halfBlock++) {
      const ql = at + halfBlock * 64;
      const qh = at + 128 + halfBlock * 32;
      const sc = at + 192 + halfBlock * 8;
      const base = b * 256 + halfBlock * 128;
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const h = blocks[qh + l];
        const q1 = ((blocks[ql + l] & 0xf) | ((h & 3) << 4)) - 32;
        const q2 = ((blocks[ql + l + 32] & 0xf) | (((h >> 2) & 3) << 4)) - 32;
        const q3 = ((blocks[ql + l] >> 4) | (((h >> 4) & 3) << 4)) - 32;
        const q4 = ((blocks[ql + l + 32] >> 4) | (((h >> 6) & 3) << 4)) - 32;
        const scale = (i: number) => d * ((blocks[sc + is + i] << 24) >> 24);
        out[base + l] = Math.fround(scale(0) * q1);
        out[base + l + 32] = Math.fround(scale(2) * q2);
        out[base + l + 64] = Math.fround(scale(4) * q3);
        out[base + l + 96] = Math.fround(scale(6) * q4);
      }
    }
  }
};


/**
 * block_q2_K (256 elements, 84 bytes): 16 scale bytes (low nibble the scale, high nibble the
 * min of a sub-block of 16), qs[64] 2-bit codes, f16 d, f16 dmin at 80 and 82;
 * element = (d sc) q - (dmin m): both products exact in float32, one rounding in the
 * subtraction. Element n*128 + j*32 + l (+ 16) is bits 2j of qs[n*32 + l (+ 16)], sub-block
 * n*8 + 2j (+ 1).
 */
const q2_K: Dequantizer = (blocks, out) => {
  for (let b = 0; b * 256 < out.length; b++) {
    const at = b * 84;
    const d = half(blocks, at + 80);
    const dmin = half(blocks, at + 82);
    for (let sub = 0; sub < 16; sub++) {
      const sc = blocks[at + sub];
      const dl = d * (sc & 0xf);
      const ml = dmin * (sc >> 4);
      const { qs, shift } = q2q3Position(sub);
      const base = b * 256 + sub * 16;
      for (let l = 0; l < 16; l++) out[base + l] = Math.fround(dl * ((blocks[at + 16 + qs + l] >> shift) & 3) - ml);
    }
  }
};

/** Where sub-block `sub` (of 16 elements) of a Q2_K / Q3_K block keeps its 2-bit codes: qs offset and shift. */
function q2q3Position(sub: number): { qs: number; shift: number } {
  const n = sub >> 3;
  const j = (sub & 7) >> 1;
  return { qs: n * 32 + (sub & 1) * 16, shift: 2 * j };
}

/** Q3_K's 6-bit scale of sub-block j from its 12 packed bytes at `at`, less 32 (ggml's kmask unpacking). */
function q3Scale(blocks: Uint8Array, at: number, j: number): number {
  const low = j < 8 ? blocks[at + j] & 0xf : blocks[at + j - 8] >> 4;
  const high = (blocks[at + 8 + (j & 3)] >> (2 * (j >> 2))) & 3;
  return (low | (high << 4)) - 32;
}

/**
 * block_q3_K (256 elements, 110 bytes): hmask[32] (the third bit, set meaning no -4),
 * qs[64] low 2 bits, 12 bytes of 6-bit scales, f16 d at 108; element = (d (s - 32)) (q - 4
 * unless its hmask bit is set), exact in float32. The hmask bit of sub-block pair n*4 + j is
 * bit n*4 + j of hmask[l (+ 16)].
 */
function q3Codes(blocks: Uint8Array, at: number, sub: number, l: number): number {
  const { qs, shift } = q2q3Position(sub);
  const bit = (sub >> 3) * 4 + ((sub & 7) >> 1);
  const q = (blocks[at + 32 + qs + l] >> shift) & 3;
  return q - ((blocks[at + (sub & 1) * 16 + l] >> bit) & 1 ? 0 : 4);
}

const q3_K: Dequantizer = (blocks, out) => {
  for (let b = 0; b * 256 < out.length; b++) {
    const at = b * 110;
    const d = half(blocks, at + 108);
    for (let sub = 0; sub < 16; sub++) {
      const dl = d * q3Scale(blocks, at + 96, sub);
      const base = b * 256 + sub * 16;
      for (let l = 0; l < 16; l++) out[base + l] = dl * q3Codes(blocks, at, sub, l);
    }
  }
};

/** ggml's kvalues_iq4nl: the 16 levels of IQ4_NL and IQ4_XS codes. */
const IQ4NL_LEVELS = Int8Array.of(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);

/** block_iq4_nl (32 elements, 18 bytes): f16 d, 16 bytes of nibbles as Q4_0 indexing IQ4NL_LEVELS; element = d level (exact). */
const iq4_nl: Dequantizer = (blocks, out) => {
  for (let b = 0; b * 32 < out.length; b++) {
    const at = b * 18;
    const d = half(blocks, at);
    for (let j = 0; j < 16; j++) {
      const byte = blocks[at + 2 + j];
      out[b * 32 + j] = d * IQ4NL_LEVELS[byte & 0xf];
      out[b * 32 + j + 16] = d * IQ4NL_LEVELS[byte >> 4];
    }
  }
};

/** IQ4_XS's 6-bit scale of sub-block ib (of 32), less 32: low nibble from scales_l, high 2 bits from scales_h. */
function iq4xsScale(blocks: Uint8Array, at: number, ib: number): number {
  const scalesH = blocks[at + 2] | (blocks[at + 3] << 8);
  return (((blocks[at + 4 + (ib >> 1)] >> (4 * (ib & 1))) & 0xf) | (((scalesH >> (2 * ib)) & 3) << 4)) - 32;
}

/**
 * block_iq4_xs (256 elements, 136 bytes): f16 d, u16 scales_h, scales_l[4], qs[128] (per
 * sub-block of 32: 16 bytes of nibbles as Q4_0); element = round32(d (ls - 32)) level, the
 * product of a 17-bit and an 8-bit integer scale rounded to float32 as ggml rounds it.
 */
const iq4_xs: Dequantizer = (blocks, out) => {
  for (let b = 0; b * 256 < out.length; b++) {
    const at = b * 136;
    const d = half(blocks, at);
    for (let ib = 0; ib < 8; ib++) {
      const dl = d * iq4xsScale(blocks, at, ib);
      const base = b * 256 + ib * 32;
      for (let j = 0; j < 16; j++) {
        const byte = blocks[at + 8 + ib * 16 + j];
        out[base + j] = Math.fround(dl * IQ4NL_LEVELS[byte & 0xf]);
        out[base + j + 16] = Math.fround(dl * IQ4NL_LEVELS[byte >> 4]);
      }
    }
  }
};


function fill(out: Float32Array, from: number, count: number, value: number): void {
  out.fill(value, from, from + count);
}

/** Types with one f16 scale (and for Q4_1/Q5_1 one f16 m, element = q d + m: min -m) per 32. */
function legacyForm(blockBytes: number, withMin: boolean): BlockForm {
  return (blocks, scale, min) => {
    for (let b = 0; b * 32 < scale.length; b++) {
      fill(scale, b * 32, 32, half(blocks, b * blockBytes));
      fill(min, b * 32, 32, withMin ? -half(blocks, b * blockBytes + 2) : 0);
    }
  };
}

function kQuantForm(blockBytes: number): BlockForm {
  return (blocks, scale, min) => {
    for (let b = 0; b * 256 < scale.length; b++) {
      const at = b * blockBytes;
      const d = half(blocks, at);
      const dmin = half(blocks, at + 2);
      for (let j = 0; j < 8; j++) {
        const [sc, m] = scaleMinK4(blocks, at + 4, j);
        fill(scale, b * 256 + j * 32, 32, d * sc);
        fill(min, b * 256 + j * 32, 32, dmin * m);
      }
    }
  };
}

/** Q6_K: element j of the 256 uses int8 scale j / 16, as q6_K above reads them. */
const q6_KForm: BlockForm = (blocks, scale, min) => {
  min.fill(0);
  for (let b = 0; b * 256 < scale.length; b++) {
    const at = b * 210;
    const d = half(blocks, at + 208);
    for (let j = 0; j < 16; j++) fill(scale, b * 256 + j * 16, 16, Math.fround(d * ((blocks[at + 192 + j] << 24) >> 24)));
  }
};

/** Q2_K: scale d sc and min dmin m per sub-block of 16 (t = the 2-bit code). */
const q2_KForm: BlockForm = (blocks, scale, min) => {
  for (let b = 0; b * 256 < scale.length; b++) {
    const at = b * 84;
    const d = half(blocks, at + 80);
    const dmin = half(blocks, at + 82);
    for (let sub = 0; sub < 16; sub++) {
      fill(scale, b * 256 + sub * 16, 16, d * (blocks[at + sub] & 0xf));
      fill(min, b * 256 + sub * 16, 16, dmin * (blocks[at + sub] >> 4));
    }
  }
};

/** Q3_K: scale d (s - 32) per sub-block of 16, no min (t = the 3-bit code less 4). */
const q3_KForm: BlockForm = (blocks, scale, min) => {
  min.fill(0);
  for (let b = 0; b * 256 < scale.length; b++) {
    const d = half(blocks, b * 110 + 108);
    for (let sub = 0; sub < 16; sub++) fill(scale, b * 256 + sub * 16, 16, d * q3Scale(blocks, b * 110 + 96, sub));
  }
};

/** IQ4_NL: scale d per 32, no min (t = the level, an 8-bit integer). */
const iq4_nlForm: BlockForm = legacyForm(18, false);

/** IQ4_XS: scale d (ls - 32) per sub-block of 32, no min (t = the level). */
const iq4_xsForm: BlockForm = (blocks, scale, min) => {
  min.fill(0);
  for (let b = 0; b * 256 < scale.length; b++) {
    const d = half(blocks, b * 136);
    for (let ib = 0; ib < 8; ib++) fill(scale, b * 256 + ib * 32, 32, d * iq4xsScale(blocks, b * 136, ib));
  }
};

const IQ = iqTypes(half);

const TABLE: Array<[number, string, number, number, Dequantizer?, BlockForm?]> = [
  [0, 'F32', 1, 4, f32],
  [1, 'F16', 1, 2, f16],
  [2, 'Q4_0', 32, 18, q4_0, legacyForm(18, false)],
  [3, 'Q4_1', 32, 20, q4_1, legacyForm(20, true)],
  [6, 'Q5_0', 32, 22, q5(false), legacyForm(22, false)],
  [7, 'Q5_1', 32, 24, q5(true), legacyForm(24, true)],
  [8, 'Q8_0', 32, 34, q8_0, legacyForm(34, false)],
  [9, 'Q8_1', 32, 40],
  [10, 'Q2_K', 256, 84, q2_K, q2_KForm],
  [11, 'Q3_K', 256, 110, q3_K, q3_KForm],
  [12, 'Q4_K', 256, 144, kQuant(false), kQuantForm(144)],
  [13, 'Q5_K', 256, 176, kQuant(true), kQuantForm(176)],
  [14, 'Q6_K', 256, 210, q6_K, q6_KForm],
  [15, 'Q8_K', 256, 292],
  [16, 'IQ2_XXS', 256, 66, IQ.IQ2_XXS.dequantize, IQ.IQ2_XXS.blockForm],
  [17, 'IQ2_XS', 256, 74, IQ.IQ2_XS.dequantize, IQ.IQ2_XS.blockForm],
  [18, 'IQ3_XXS', 256, 98, IQ.IQ3_XXS.dequantize, IQ.IQ3_XXS.blockForm],
  [19, 'IQ1_S', 256, 50, IQ.IQ1_S.dequantize, IQ.IQ1_S.blockForm],
  [20, 'IQ4_NL', 32, 18, iq4_nl, iq4_nlForm],
  [21, 'IQ3_S', 256, 110, IQ.IQ3_S.dequantize, IQ.IQ3_S.blockForm],
  [22, 'IQ2_S', 256, 82, IQ.IQ2_S.dequantize, IQ.IQ2_S.blockForm],
  [23, 'IQ4_XS', 256, 136, iq4_xs, iq4_xsForm],
  [24, 'I8', 1, 1],
  [25, 'I16', 1, 2],
  [26, 'I32', 1, 4],
  [27, 'I64', 1, 8],
  [28, 'F64', 1, 8],
  [29, 'IQ1_M', 256, 56, IQ.IQ1_M.dequantize, IQ.IQ1_M.blockForm],
  [30, 'BF16', 1, 2, bf16],
  [34, 'TQ1_0', 256, 54],
  [35, 'TQ2_0', 256, 66],
  [39, 'MXFP4', 32, 17],
];

export const GGML_TYPES: ReadonlyMap<number, GgmlTypeInfo> = new Map(
  TABLE.map(([id, name, blockSize, blockBytes, dequantize, blockForm]) => [id, { id, name, blockSize, blockBytes, dequantize, blockForm }]),
);

export const SUPPORTED_TYPE_NAMES: readonly string[] = TABLE.filter((row) => row[4]).map((row) => row[1]);

export function typeByName(name: string): GgmlTypeInfo | undefined {
  return [...GGML_TYPES.values()].find((type) => type.name === name);
}

/** The float32 values of `elements` elements stored as `type` in `blocks`. */
export function dequantize(type: GgmlTypeInfo, blocks: Uint8Array, elements: number): Float32Array {
  if (!type.dequantize) throw new Error(`ggml type ${type.name} cannot be dequantized here`);
  if (elements % type.blockSize !== 0 || (elements / type.blockSize) * type.blockBytes !== blocks.byteLength) {
    throw new Error(`${elements} ${type.name} elements do not fill ${blocks.byteLength} bytes`);
  }
  const out = new Float32Array(elements);
  type.dequantize(blocks, out);
  return out;
}

/** Each element's block scale and min (`type.blockForm`), or undefined for float types. */
export function blockFormOf(type: GgmlTypeInfo, blocks: Uint8Array, elements: number): { scale: Float32Array; min: Float32Array } | undefined {
  if (!type.blockForm) return undefined;
  if ((elements / type.blockSize) * type.blockBytes !== blocks.byteLength) throw new Error(`${elements} ${type.name} elements do not fill ${blocks.byteLength} bytes`);
  const scale = new Float32Array(elements);
  const min = new Float32Array(elements);
  type.blockForm(blocks, scale, min);
  return { scale, min };
}
