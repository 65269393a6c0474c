/**
 * Prompts waiting together are prefilled in shared model calls (BatchRunner.prefillTogether):
 * each request's tokens are exactly those it gets alone, whatever the lengths beside it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { promptBunches } from '../../src/engine/batch-runner.js';
import type { Engine } from '../../src/engine/types.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { collectGeneration, embeddedEngine, MODEL_DIR } from '../helpers/model.js';

afterAll(async () => (await embeddedEngine('native')).dispose());

const ids = (length: number, seed: number) => Array.from({ length }, (_, i) => 259 + ((seed * 31 + i * 17) % 253));

/** All of `prompts` submitted in one tick: they wait for the step loop's next admission together (the first may start an idle loop alone). */
function together(engine: Engine, prompts: number[][], maxTokens: number) {
  return Promise.all(prompts.map((prompt) => collectGeneration(engine, prompt, { temperature: 0, maxTokens, ignoreEos: true })));
}

describe('prefilling waiting prompts together', () => {
  it('gives every request the tokens it gets alone, for prompts of different lengths', async () => {
    const engine = await embeddedEngine('native');
    // Lengths that share calls (within a quarter + 8 of each other) and one that does not.
    const prompts = [ids(16, 1), ids(9, 2), ids(16, 3), ids(12, 4), ids(5, 5), ids(60, 6), ids(14, 7)];
    const alone = [];
    for (const prompt of prompts) alone.push(await collectGeneration(engine, prompt, { temperature: 0, maxTokens: 24, ignoreEos: true }));
    const batched = await together(engine, prompts, 24);
    for (const [index, result] of batched.entries()) expect(result.tokenIds, `prompt ${index}`).toEqual(alone[index]!.tokenIds);
  });

  it('makes one model call for prompts that wait together', async () => {
    const engine = await embeddedEngine('native');
    // max_tokens 1: the only model calls are the prefills (the first token comes from them).
    const before = engine.stats().steps;
    const results = await together(engine, [ids(16, 11), ids(16, 12), ids(15, 13), ids(14, 14), ids(16, 15)], 1);
    expect(results.every((result) => result.tokenIds.length === 1)).toBe(true);
    // Five prompts, at most two calls: the first may start an idle engine alone (a loop still
    // winding down from the last test takes all five at once); the rest share one.
    expect(engine.stats().steps - before).toBeLessThanOrEqual(2);
  });
});

describe('which graphs share prefills', () => {
  it('the embedded in-place graph passes the load-time check; the present.* graph of the same weights is not tried', async () => {
    expect((await embeddedEngine('native')).loadReport.prefillTogether).toBe(true);
    const presentGraph = await createNodeEngine({ modelDir: MODEL_DIR, modelFile: 'onnx/model.onnx' });
    try {
      expect(presentGraph.loadReport.contract).not.toContain('in-place');
      expect(presentGraph.loadReport.prefillTogether).toBe(false);
    } finally {
      await presentGraph.dispose();
    }
  });
});

describe('promptBunches', () => {
  const lengths = (prompts: number[][], bunches: number[][]) => bunches.map((bunch) => bunch.map((index) => prompts[index]!.length));

  it('groups prompts of similar lengths and keeps far longer ones apart', () => {
    const prompts = [ids(16, 0), ids(100, 0), ids(9, 0), ids(12, 0), ids(110, 0), ids(400, 0)];
    expect(lengths(prompts, promptBunches(prompts, 512))).toEqual([[9, 12, 16], [100, 110], [400]]);
  });

  it('keeps a call’s logits within budget on a large vocabulary', () => {
    const prompts = Array.from({ length: 8 }, (_, i) => ids(20 + i, i));
    // 8 rows × up to 8 positions × 128 K vocabulary would be 8 M floats: split.
    const bunches = promptBunches(prompts, 128 * 1024);
    expect(bunches.length).toBeGreaterThan(1);
    for (const bunch of bunches) {
      const sizes = bunch.map((index) => prompts[index]!.length);
      expect(bunch.length * (Math.max(...sizes) - Math.min(...sizes) + 1) * 128 * 1024).toBeLessThanOrEqual(4 * 1024 * 1024);
    }
    expect(bunches.flat().sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});
