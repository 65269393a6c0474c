import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { readLlama2cCheckpoint } from '../../src/convert/llama2c-checkpoint.js';
import { sharedModelFile } from './model-paths.js';

const load = async () => new Uint8Array(await readFile(sharedModelFile('stories260K.bin')));

describe('readLlama2cCheckpoint', () => {
  it('reads the stories260K header and tensor shapes documented in the model README', async () => {
    const ckpt = readLlama2cCheckpoint(await load());
    expect(ckpt.header).toEqual({
      dim: 64,
      hiddenDim: 172,
      nLayers: 5,
      nHeads: 8,
      nKvHeads: 4,
      vocabSize: 512,
      seqLen: 512,
      sharedClassifier: true,
    });
    expect(ckpt.headDim).toBe(8);
    expect(ckpt.kvDim).toBe(32);
    expect(ckpt.layers).toHaveLength(5);
    expect(ckpt.layers[0].wk).toHaveLength(32 * 64);
    expect(ckpt.layers[4].w2).toHaveLength(64 * 172);
    expect(ckpt.classifier).toBe(ckpt.tokenEmbedding);
    // Position 0 of a RoPE table is the identity rotation: a check that the offsets line up.
    expect(Array.from(ckpt.freqCisReal.subarray(0, 4))).toEqual([1, 1, 1, 1]);
    expect(Array.from(ckpt.freqCisImag.subarray(0, 4))).toEqual([0, 0, 0, 0]);
    // RMSNorm gains are trained around 1, unlike the matrices around 0.
    const meanGain = ckpt.rmsFinal.reduce((a, b) => a + b, 0) / 64;
    expect(meanGain).toBeGreaterThan(0.3);
  });

  it('accepts a buffer at an unaligned offset', async () => {
    const bytes = await load();
    const shifted = new Uint8Array(bytes.length + 1);
    shifted.set(bytes, 1);
    const ckpt = readLlama2cCheckpoint(shifted.subarray(1));
    expect(ckpt.rmsFinal).toEqual(readLlama2cCheckpoint(bytes).rmsFinal);
  });

  it('rejects truncated files and files with trailing data', async () => {
    const bytes = await load();
    expect(() => readLlama2cCheckpoint(bytes.subarray(0, bytes.length - 4))).toThrow(/truncated/);
    const longer = new Uint8Array(bytes.length + 4);
    longer.set(bytes);
    expect(() => readLlama2cCheckpoint(longer)).toThrow(/trailing/);
    expect(() => readLlama2cCheckpoint(bytes.subarray(0, 10))).toThrow(/too short/);
  });

  it('rejects a header that is not a llama2.c model', () => {
    const header = new Int32Array([64, 172, 5, 7, 4, 512, 512]); // 64 is not a multiple of 7 heads
    expect(() => readLlama2cCheckpoint(new Uint8Array(header.buffer))).toThrow(/head/);
  });
});
