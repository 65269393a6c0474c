/**
 * Our dequantization of each ggml type equals llama.cpp's: the fixtures are seeded random
 * blocks (scales included: zero, negative, subnormal) and what the `gguf` Python package's
 * dequantize (llama.cpp's mirror of ggml's dequantize_row_*) makes of them, written by
 * scripts/gguf/make_fixtures.py. Compared bit for bit.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { dequantize, SUPPORTED_TYPE_NAMES, typeByName } from '../../src/gguf/ggml-types.js';

const fixture = (name: string) => new URL(`../fixtures/gguf/blocks/${name}`, import.meta.url);

describe('ggml dequantization', () => {
  it('covers the types the issue names', () => {
    for (const name of ['F32', 'F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q4_K', 'Q5_K', 'Q6_K']) expect(SUPPORTED_TYPE_NAMES).toContain(name);
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
});
