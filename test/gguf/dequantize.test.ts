/**
 * Our dequantization of each ggml type equals llama.cpp's: the fixtures are seeded random
 * blocks (scales included: zero, negative, subnormal) and what the `gguf` Python package's
 * dequantize (llama.cpp's mirror of ggml's dequantize_row_*) makes of them, written by
 * scripts/gguf/make_fixtures.py; for Q2_K, Q3_K and the IQ types, what ggml's own
 * dequantize_row_* (libggml-base.so of the node-llama-cpp bundle) makes of them, written by
 * scripts/gguf/make_quant_blocks.py. Compared bit for bit.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { blockFormOf, dequantize, SUPPORTED_TYPE_NAMES, typeByName } from '../../src/gguf/ggml-types.js';
import { quantizeRows } from '../../src/gguf/quantized-weights.js';

const fixture = (name: string) => new URL(`../fixtures/gguf/blocks/${name}`, import.meta.url);

describe('ggml dequantization', () => {
  it('covers the types the issue names', () => {
    for (const name of ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q4_K', 'Q5_K', 'Q6_K', 'Q2_K', 'Q3_K', 'IQ4_NL', 'IQ4_XS', 'IQ2_XXS', 'IQ2_XS', 'IQ2_S', 'IQ3_XXS', 'IQ3_S', 'IQ1_S', 'IQ1_M']) expect(SUPPORTED_TYPE_NAMES).toContain(name);
  });

  for (const name of SUPPORTED_TYPE_NAMES) {
    it(`${name} blocks give the gguf package's float32 values, bit for bit`, () => {
      const raw = new Uint8Array(readFileSync(fixture(`${name}.bin`)));
      const expected = readFileSync(fixture(`${name}.f32`));
      const expectedBits = new Uint32Array(expected.buffer, expected.byteOffset, expected.byteLength / 4);
      const values = dequantize(typeByName(name)!, raw, expectedBits.length);
      const bits = new Uint32Array(values.buffer);
      const mismatches = [...bits.keys()].filter((i) => bits[i] !== expectedBits[i]);
      expect(mismatches.slice(0, 5).map((i) => [i, values[i], new Float32Array(expectedBits.buffer, expectedBits.byteOffset)[i]])).toEqual([]);
      expect(values.length).toBeGreaterThanOrEqual(1024);
    });
  }

  // What keeps a type quantized in the graph (MatMulNBits over the file's integers): every
  // element is its block's scale * t - min with t an integer of at most 8 bits.
  for (const name of SUPPORTED_TYPE_NAMES.filter((type) => typeByName(type)!.blockForm)) {
    it(`${name} blocks are scale * t - min with integer t, rebuilt bit for bit`, () => {
      const type = typeByName(name)!;
      const raw = new Uint8Array(readFileSync(fixture(`${name}.bin`)));
      const count = (raw.byteLength / type.blockBytes) * type.blockSize;
      const values = dequantize(type, raw, count);
      const { scale, min } = blockFormOf(type, raw, count)!;
      const blockSize = ['Q6_K', 'Q2_K', 'Q3_K', 'IQ2_XS', 'IQ2_S', 'IQ1_M'].includes(name) ? 16 : 32;
      const every = (v: Float32Array) => v.filter((_, i) => i % blockSize === 0);
      const result = quantizeRows(values, every(scale), every(min), 1, count, blockSize);
      expect('reason' in result ? result.reason : '').toBe('');
      if (!('codes' in result)) return;
      const { codes, zeroPoints } = result.codes;
      const wrong: number[] = [];
      for (let i = 0; i < count; i++) {
        const t = codes[i] - zeroPoints[Math.floor(i / blockSize)];
        // == : a zero scale times a negative t is -0 where ggml wrote +0 or the reverse; both multiply as 0.
        if (Math.fround(Math.fround(scale[i] * t) - min[i]) != values[i]) wrong.push(i);
      }
      expect(wrong.slice(0, 5)).toEqual([]);
    });
  }
});
