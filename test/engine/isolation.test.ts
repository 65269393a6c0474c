/**
 * One request failing while it samples (its guide throws, or leaves no token to sample)
 * ends that request with an error and leaves every other request in the batch running,
 * with the output it would have had alone.
 */
import { describe, expect, it } from 'vitest';
import type { Guide, GuideFactory } from '../../src/guided/guide.js';
import { collectGeneration, embeddedEngine, golden } from '../helpers/model.js';

/** A guide that allows every token, then fails (throws, or allows nothing) at its `failAt`-th step. */
function failingGuide(failAt: number, how: 'throw' | 'allow nothing'): GuideFactory {
  return {
    request: { kind: 'regex', pattern: '.*' },
    createGuide(): Guide {
      let steps = 0;
      const mask = new Int32Array(16).fill(-1);
      return {
        allowedMask: () => mask,
        isAllowed: () => true,
        maskLogits(logits) {
          steps += 1;
          if (steps < failAt) return;
          if (how === 'throw') throw new Error('the guide broke');
          logits.fill(-Infinity);
        },
        firstAllowedToken: () => (steps >= failAt ? -1 : 0),
        accept() {},
        isTerminated: () => false,
        dispose() {},
      };
    },
  };
}

describe('a failing request in a batch', () => {
  it.each(['throw', 'allow nothing'] as const)('whose guide fails mid-generation (%s) ends alone; the others finish as if alone', async (how) => {
    const engine = await embeddedEngine();
    const params = { maxTokens: 40, temperature: 0, ignoreEos: true };
    const solo = await collectGeneration(engine, golden.prompt_ids, params);
    const others = Array.from({ length: 6 }, () => collectGeneration(engine, golden.prompt_ids, params));
    const failing = collectGeneration(engine, golden.prompt_ids, { ...params, guide: failingGuide(5, how) });
    await expect(failing).rejects.toThrow(how === 'throw' ? /the guide broke/ : /no finite logit/);
    for (const other of await Promise.all(others)) {
      expect(other.tokenIds).toEqual(solo.tokenIds);
      expect(other.finishReason).toBe('length');
    }
    // The engine goes on serving.
    expect((await collectGeneration(engine, golden.prompt_ids, params)).tokenIds).toEqual(solo.tokenIds);
  });
});
