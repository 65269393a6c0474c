/**
 * The committed ONNX model against the llama2.c reference forward pass, on onnxruntime-node
 * and onnxruntime-web (WASM): prefill, KV-cache decode steps, and batches whose rows have
 * different real lengths.
 */
import { readFile } from 'node:fs/promises';
import * as ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Llama2cCheckpoint } from '../../scripts/convert/llama2c-checkpoint.js';
import { Llama2cReference } from './llama2c-reference.js';
import { COMMITTED_ONNX, loadSharedCheckpoint } from './model-paths.js';
import { DecoderHarness, logitsAt, maxAbsDiff, VOCAB, type Ort } from './onnx-decoder-harness.js';

const TOLERANCE = 1e-4;
const PROMPT = [1, 403, 407, 261, 378, 432, 383];
const SHORT_PROMPT = [1, 320, 395];

const runtimes: { runtime: string; ort: Ort }[] = [
  { runtime: 'onnxruntime-node', ort: ortNode },
  { runtime: 'onnxruntime-web (WASM)', ort: ortWeb },
];

describe.each(runtimes)('committed stories260k ONNX model vs llama2.c reference on $runtime', ({ ort }) => {
  let ckpt: Llama2cCheckpoint;
  let model: DecoderHarness;

  beforeAll(async () => {
    ortWeb.env.wasm.numThreads = 1;
    ckpt = await loadSharedCheckpoint();
    model = await DecoderHarness.create(ort, await readFile(COMMITTED_ONNX));
  });

  it('matches the reference logits at every prefill position', async () => {
    const expected = Llama2cReference.prefill(ckpt, PROMPT);
    const out = await model.step({ inputIds: [PROMPT] });
    expect(out.dims).toEqual([1, PROMPT.length, VOCAB]);
    PROMPT.forEach((_, pos) => expect(maxAbsDiff(logitsAt(out.logits, pos), expected[pos])).toBeLessThan(TOLERANCE));
  });

  it('matches the reference over decode steps that reuse the KV cache', async () => {
    const tokens = [...PROMPT, 286, 261, 376, 298, 315];
    const expected = Llama2cReference.prefill(ckpt, tokens);
    let out = await model.step({ inputIds: [PROMPT] });
    for (let pos = PROMPT.length; pos < tokens.length; pos++) {
      out = await model.step({ inputIds: [[tokens[pos]]], past: out.present });
      expect(out.present.get('past_key_values.0.key')!.dims).toEqual([1, 4, pos + 1, 8]);
      expect(maxAbsDiff(logitsAt(out.logits, 0), expected[pos])).toBeLessThan(TOLERANCE);
    }
  });

  it('matches the reference when several tokens are fed on top of a cache (chunked prefill)', async () => {
    const tokens = [...PROMPT, 286, 261, 376];
    const expected = Llama2cReference.prefill(ckpt, tokens);
    const first = await model.step({ inputIds: [PROMPT.slice(0, 4)] });
    const rest = await model.step({ inputIds: [tokens.slice(4)], past: first.present });
    tokens.slice(4).forEach((_, i) =>
      expect(maxAbsDiff(logitsAt(rest.logits, i), expected[4 + i])).toBeLessThan(TOLERANCE),
    );
  });

  it('gives each row of a left-padded batch the same logits as running it alone', async () => {
    const pad = PROMPT.length - SHORT_PROMPT.length;
    const expectedLong = Llama2cReference.prefill(ckpt, PROMPT);
    const expectedShort = Llama2cReference.prefill(ckpt, SHORT_PROMPT);
    const out = await model.step({
      inputIds: [PROMPT, [...Array<number>(pad).fill(0), ...SHORT_PROMPT]],
      attentionMask: [PROMPT.map(() => 1), [...Array<number>(pad).fill(0), ...SHORT_PROMPT.map(() => 1)]],
      positionIds: [PROMPT.map((_, i) => i), [...Array<number>(pad).fill(1), ...SHORT_PROMPT.map((_, i) => i)]],
    });
    expect(out.logits.every(Number.isFinite)).toBe(true);
    PROMPT.forEach((_, pos) => expect(maxAbsDiff(logitsAt(out.logits, pos), expectedLong[pos])).toBeLessThan(TOLERANCE));
    SHORT_PROMPT.forEach((_, pos) =>
      expect(maxAbsDiff(logitsAt(out.logits, PROMPT.length + pad + pos), expectedShort[pos])).toBeLessThan(TOLERANCE),
    );

    // Continue both rows for a few steps on the shared, padded cache.
    const nextLong = [286, 261, 376];
    const nextShort = [267, 337, 410];
    const refLong = new Llama2cReference(ckpt);
    PROMPT.forEach((t, p) => refLong.forward(t, p));
    const refShort = new Llama2cReference(ckpt);
    SHORT_PROMPT.forEach((t, p) => refShort.forward(t, p));
    let state = out;
    let mask = [PROMPT.map(() => 1), [...Array<number>(pad).fill(0), ...SHORT_PROMPT.map(() => 1)]];
    for (let n = 0; n < nextLong.length; n++) {
      mask = mask.map((row) => [...row, 1]);
      state = await model.step({
        inputIds: [[nextLong[n]], [nextShort[n]]],
        attentionMask: mask,
        positionIds: [[PROMPT.length + n], [SHORT_PROMPT.length + n]],
        past: state.present,
      });
      expect(maxAbsDiff(logitsAt(state.logits, 0), refLong.forward(nextLong[n], PROMPT.length + n))).toBeLessThan(TOLERANCE);
      expect(maxAbsDiff(logitsAt(state.logits, 1), refShort.forward(nextShort[n], SHORT_PROMPT.length + n))).toBeLessThan(
        TOLERANCE,
      );
    }
  });

  it('ignores a masked hole in the middle of a row', async () => {
    // Row 1 has a junk token at index 2 masked out; its real tokens keep consecutive positions.
    const withHole = [1, 403, 487, 407, 261];
    const real = [1, 403, 407, 261];
    const expected = Llama2cReference.prefill(ckpt, real);
    const out = await model.step({
      inputIds: [withHole],
      attentionMask: [[1, 1, 0, 1, 1]],
      positionIds: [[0, 1, 2, 2, 3]],
    });
    [0, 1, 3, 4].forEach((index, realPos) =>
      expect(maxAbsDiff(logitsAt(out.logits, index), expected[realPos])).toBeLessThan(TOLERANCE),
    );
  });

  it('keeps a fully padded row finite without disturbing the other row', async () => {
    const expected = Llama2cReference.prefill(ckpt, SHORT_PROMPT);
    const out = await model.step({
      inputIds: [SHORT_PROMPT, [0, 0, 0]],
      attentionMask: [[1, 1, 1], [0, 0, 0]],
      positionIds: [[0, 1, 2], [1, 1, 1]],
    });
    expect(out.logits.every(Number.isFinite)).toBe(true);
    for (const t of out.present.values()) expect((t.data as Float32Array).every(Number.isFinite)).toBe(true);
    SHORT_PROMPT.forEach((_, pos) => expect(maxAbsDiff(logitsAt(out.logits, pos), expected[pos])).toBeLessThan(TOLERANCE));
  });
});
