/**
 * GGUF weights kept quantized (src/gguf/quantized-weights.ts): the graph that executes the
 * file's integers through MatMulNBits / GatherBlockQuantized (with the block-sum min
 * correction for Q4_1/Q5_1/K-quants) gives the logits of the graph built from ggml's exact
 * float32 dequantization, within float32 rounding, at every prompt position and on a decode
 * step over the cache; and no projection of a quantized type is left float32. (Greedy
 * agreement with llama-server is test/gguf/llama-server-parity.test.ts, which serves the
 * quantized graph.)
 */
import { describe, expect, it } from 'vitest';
import { sourcesOf } from '../../src/gguf/gguf-model.js';
import { ggufGraphOptionsFromEnv } from '../../src/gguf/node-gguf.js';
import { fixtureModel as modelOf, forward as run, fusedSession as session, maxRelativeDiff } from './gguf-sessions.js';

const FIXTURES = ['tiny-llama-kquants', 'tiny-llama-legacy-quantized', 'tiny-llama-legacy', 'tiny-qwen3-q8_0', 'tiny-phi3-q4'];
const FLOAT_TYPES = new Set(['F32', 'F16', 'BF16']);
const PROMPT = [1, 403, 407, 261, 378, 432, 383, 300];

describe('GGUF weights kept quantized', () => {
  for (const fixture of FIXTURES) {
    it(`${fixture}: the quantized graph's logits equal the float32-dequantized graph's within float rounding`, async () => {
      const model = await modelOf(fixture);
      const quantized = await session(model, 'quantized');
      const float = await session(model, 'float32');
      expect(float.nodes).not.toContain('MatMulNBits');
      // Every projection and the embedding: quantized exactly when all the file rows it is built from are.
      const typeOf = new Map(model.file.tensors.map((t) => [t.name, t.type!.name]));
      expect(quantized.forms.size).toBe(4 * model.shape.nLayers + (model.shape.tiedEmbeddings ? 1 : 2));
      for (const [weight, form] of quantized.forms) {
        const allQuantized = sourcesOf(weight).every((source) => !FLOAT_TYPES.has(typeOf.get(source)!));
        expect(form.startsWith('float32'), `${weight}: ${form}`).toBe(!allQuantized);
      }
      const nbits = quantized.nodes.filter((op) => op === 'MatMulNBits').length;
      // A tied head reads the embedding's codes: one MatMulNBits more than the untied weights.
      const kept = [...quantized.forms].filter(([weight, form]) => !form.startsWith('float32') && (weight !== 'model.embed_tokens.weight' || model.shape.tiedEmbeddings));
      expect(nbits).toBe(kept.length);
      const ids = PROMPT.map((id) => id % model.shape.vocabSize);
      const q = await run(quantized.session, model, ids);
      const f = await run(float.session, model, ids);
      const prefill = maxRelativeDiff(q.logits, f.logits);
      const qStep = await run(quantized.session, model, [ids[2]], q.present);
      const fStep = await run(float.session, model, [ids[2]], f.present);
      const step = maxRelativeDiff(qStep.logits, fStep.logits);
      expect(prefill).toBeLessThan(1e-5);
      expect(step).toBeLessThan(1e-5);
    }, 60_000);
  }

  it('reads GGUF_WEIGHTS and GGUF_ACCURACY_LEVEL, refusing other values by name', () => {
    expect(ggufGraphOptionsFromEnv({})).toEqual({ weights: 'quantized', accuracyLevel: 0 });
    expect(ggufGraphOptionsFromEnv({ GGUF_WEIGHTS: 'float32', GGUF_ACCURACY_LEVEL: '4' })).toEqual({ weights: 'float32', accuracyLevel: 4 });
    expect(() => ggufGraphOptionsFromEnv({ GGUF_WEIGHTS: 'int4' })).toThrow(/GGUF_WEIGHTS must be one of quantized, float32, got "int4"/);
    expect(() => ggufGraphOptionsFromEnv({ GGUF_ACCURACY_LEVEL: '2' })).toThrow(/GGUF_ACCURACY_LEVEL must be 0, 1 or 4, got "2"/);
  });
});
