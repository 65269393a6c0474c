/**
 * The decoder contract every converted graph must meet, checked against the llama2.c
 * reference forward pass: prefill, KV-cache decode steps, chunked prefill, left-padded
 * batches, masked holes and fully padded rows. Registered once per model and runtime.
 */
import { beforeAll, expect, it } from 'vitest';
import type { DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import { Llama2cReference } from './llama2c-reference.js';
import { loadSharedCheckpoint } from './model-paths.js';
import { DecoderHarness, logitsAt, maxAbsDiff, VOCAB, type Ort } from './onnx-decoder-harness.js';

const TOLERANCE = 1e-4;
const PROMPT = [1, 403, 407, 261, 378, 432, 383];
const SHORT_PROMPT = [1, 320, 395];

export interface SemanticsOptions {
  /** Several tokens per row on top of a cache in a batch of several rows (the gqa flavour cannot). */
  batchedMultiTokenSteps: boolean;
}

export function decoderSemanticsTests(
  ort: Ort,
  modelBytes: () => Promise<Uint8Array>,
  options: SemanticsOptions = { batchedMultiTokenSteps: true },
): void {
  let ckpt: DecoderCheckpoint;
  let model: DecoderHarness;

  beforeAll(async () => {
    ckpt = await loadSharedCheckpoint();
    model = await DecoderHarness.create(ort, await modelBytes());
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

  it('returns present = past followed by the new keys and values', async () => {
    const first = await model.step({ inputIds: [PROMPT.slice(0, 4)] });
    const next = await model.step({ inputIds: [PROMPT.slice(4)], past: first.present });
    for (const [name, past] of first.present) {
      const present = next.present.get(name)!;
      expect(present.dims).toEqual([1, 4, PROMPT.length, 8]);
      const pastData = past.data as Float32Array;
      const presentData = present.data as Float32Array;
      for (let head = 0; head < 4; head++) {
        const kept = presentData.subarray(head * PROMPT.length * 8, (head * PROMPT.length + 4) * 8);
        expect(kept).toEqual(pastData.subarray(head * 4 * 8, (head + 1) * 4 * 8));
      }
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

  const batchedChunks = () => {
    const rows = [PROMPT, [1, 320, 395, 286, 261, 376, 298]];
    return { rows, first: model.step({ inputIds: rows.map((r) => r.slice(0, 4)) }) };
  };
  if (options.batchedMultiTokenSteps) {
    it('runs several tokens per row on top of a batched cache', async () => {
      const { rows, first } = batchedChunks();
      const rest = await model.step({ inputIds: rows.map((r) => r.slice(4)), past: (await first).present });
      rows.forEach((tokens, row) => {
        const expected = Llama2cReference.prefill(ckpt, tokens);
        for (let i = 4; i < tokens.length; i++) {
          expect(maxAbsDiff(logitsAt(rest.logits, row * 3 + i - 4), expected[i])).toBeLessThan(TOLERANCE);
        }
      });
    });
  } else {
    it('refuses several tokens per row on top of a batched cache with an error', async () => {
      const { rows, first } = batchedChunks();
      const past = (await first).present;
      await expect(model.step({ inputIds: rows.map((r) => r.slice(4)), past })).rejects.toThrow(/batch_size must be 1/);
    });
  }

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
}
