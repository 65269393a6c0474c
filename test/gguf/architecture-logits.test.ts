/**
 * GGUF architectures beyond llama against transformers itself: test/fixtures/gguf/arch-logits.json
 * holds transformers' logits (Qwen3ForCausalLM, Phi3ForCausalLM, float32) for token sequences on
 * the seeded random models scripts/gguf/make_arch_fixtures.py converted with llama.cpp's
 * convert_hf_to_gguf.py. The graph built from the GGUF gives those logits within float32
 * rounding at every position (a sample of ids) and over the whole last row, in one prefill and
 * in a decode step over the cache.
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

const REFERENCE = JSON.parse(readFileSync(new URL('../fixtures/gguf/arch-logits.json', import.meta.url), 'utf8')) as Record<
  string,
  { sample: number[]; sequences: Sequence[] }
>;

/** float32 graphs against float32 transformers: rounding (measured ~1e-6); a norm weight out of order gives ~1. */
const BOUND = 1e-5;

describe('GGUF architectures: logits equal transformers\'', () => {
  for (const file of ['tiny-qwen3.gguf', 'tiny-phi3.gguf']) {
    it(`${file}: every position's logits, prefill and a decode step`, async () => {
      const { sample, sequences } = REFERENCE[file];
      const model = await fixtureModel(file.replace(/\.gguf$/, ''));
      const { session } = await fusedSession(model, 'float32');
      const vocab = model.shape.vocabSize;
      for (const { ids, sample_logits: sampled, last_logits: last, argmax } of sequences) {
        const { logits } = await forward(session, model, ids);
        const row = (p: number) => logits.subarray(p * vocab, (p + 1) * vocab);
        const ours = ids.map((_, p) => sample.map((id) => row(p)[id]));
        expect(maxRelativeDiff(ours.flat(), sampled.flat())).toBeLessThan(BOUND);
        expect(maxRelativeDiff(row(ids.length - 1), last)).toBeLessThan(BOUND);
        expect(ids.map((_, p) => row(p).indexOf(Math.max(...row(p))))).toEqual(argmax);
        const prefix = await forward(session, model, ids.slice(0, -1));
        const step = await forward(session, model, ids.slice(-1), prefix.present);
        expect(maxRelativeDiff(step.logits, last)).toBeLessThan(BOUND);
      }
    }, 60_000);
  }
});
