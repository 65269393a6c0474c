/**
 * The low-bit types users download (Q2_K, Q3_K_S/M/L, IQ4_NL, IQ4_XS, the IQ3 / IQ2 / IQ1
 * i-quants, made with an importance matrix as llama-quantize requires) against their exact
 * reference: test/fixtures/gguf/lowbit-logits.json holds transformers' float32 logits with
 * every tensor of each file loaded as ggml's own dequantize_row_* makes it
 * (scripts/gguf/make_lowbit_fixtures.py: a seeded Qwen3ForCausalLM converted by llama.cpp's
 * convert_hf_to_gguf.py and quantized by its llama-quantize). Both graphs give those logits
 * within float32 rounding at every position and on a decode step: the float32 one (each
 * weight dequantized here) and the one that keeps the file's integers (MatMulNBits).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fixtureModel, forward, fusedSession, maxRelativeDiff } from './gguf-sessions.js';

interface Sequence {
  ids: number[];
  sample_logits: number[][];
  last_logits: number[];
  argmax: number[];
}

const REFERENCE = JSON.parse(readFileSync(new URL('../fixtures/gguf/lowbit-logits.json', import.meta.url), 'utf8')) as Record<
  string,
  { types: Record<string, number>; sample: number[]; sequences: Sequence[] }
>;

/** float32 graphs against float32 transformers on the same float32 weights: rounding only. */
const BOUND = 1e-5;

describe('GGUF low-bit types: logits equal transformers\' on ggml\'s dequantization', () => {
  it('the files cover every low-bit type', () => {
    const covered = new Set(Object.values(REFERENCE).flatMap((entry) => (typeof entry === 'object' ? Object.keys(entry.types) : [])));
    for (const type of ['Q2_K', 'Q3_K', 'IQ4_NL', 'IQ4_XS', 'IQ3_XXS', 'IQ3_S', 'IQ2_XXS', 'IQ2_XS', 'IQ2_S', 'IQ1_S', 'IQ1_M']) expect(covered).toContain(type);
  });

  for (const file of Object.keys(REFERENCE).filter((key) => key.endsWith('.gguf'))) {
    it(`${file}: both weight forms, every position, prefill and a decode step`, async () => {
      const { sample, sequences, types } = REFERENCE[file];
      const model = await fixtureModel(file.replace(/\.gguf$/, ''));
      const fileTypes = new Set(model.file.tensors.map((t) => t.type!.name));
      expect([...fileTypes].sort()).toEqual(Object.keys(types).sort());
      const vocab = model.shape.vocabSize;
      for (const weights of ['float32', 'quantized'] as const) {
        const { session, forms } = await fusedSession(model, weights);
        if (weights === 'quantized') {
          // Every projection and the embedding run on the file's integers: none left float32.
          expect([...forms.values()].filter((form) => form.startsWith('float32'))).toEqual([]);
        }
        for (const { ids, sample_logits: sampled, last_logits: last, argmax } of sequences) {
          const { logits } = await forward(session, model, ids);
          const row = (p: number) => logits.subarray(p * vocab, (p + 1) * vocab);
          expect(maxRelativeDiff(ids.map((_, p) => sample.map((id) => row(p)[id])).flat(), sampled.flat()), weights).toBeLessThan(BOUND);
          expect(maxRelativeDiff(row(ids.length - 1), last), weights).toBeLessThan(BOUND);
          expect(ids.map((_, p) => row(p).indexOf(Math.max(...row(p))))).toEqual(argmax);
          const prefix = await forward(session, model, ids.slice(0, -1));
          const step = await forward(session, model, ids.slice(-1), prefix.present);
          expect(maxRelativeDiff(step.logits, last), weights).toBeLessThan(BOUND);
        }
      }
    }, 120_000);
  }
});
