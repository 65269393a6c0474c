import { describe, expect, it } from 'vitest';
import { Sequence } from '../../src/engine/sequence.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import { embeddedEngine } from '../helpers/model.js';

async function repetitiveSequence(maxTokens = 100) {
  const engine = await embeddedEngine();
  // The prompt repeats itself: every suffix has an earlier occurrence to continue.
  const prompt = [5, 6, 7, 8, 5, 6, 7, 8, 5, 6];
  const sequence = new Sequence(0, prompt, defaultSamplingParams({ temperature: 0, maxTokens }), engine.tokenizer, { vocabSize: 512, maxModelLen: 512, eosTokenIds: [2] }, {
    sink: { emit: () => {}, fail: (error) => { throw error; } },
  });
  return sequence;
}

describe('Sequence drafts (speculative decoding)', () => {
  it('guesses from its own context, within max_tokens', async () => {
    const sequence = await repetitiveSequence(3);
    expect(sequence.draftTokens(4)).toEqual([7, 8]);
  });

  it('pauses guessing after failed drafts, twice as long each time in a row, and resumes after a hit', async () => {
    const sequence = await repetitiveSequence();
    const pauseAfterFailure = () => {
      sequence.draftOutcome(0);
      let skipped = 0;
      while (sequence.draftTokens(4).length === 0) skipped++;
      return skipped;
    };
    expect(sequence.draftTokens(4)).toEqual([7, 8, 5, 6]);
    expect([pauseAfterFailure(), pauseAfterFailure(), pauseAfterFailure()]).toEqual([2, 4, 8]);
    sequence.draftOutcome(3);
    expect(sequence.draftTokens(4)).toEqual([7, 8, 5, 6]);
    expect(pauseAfterFailure()).toBe(2);
    for (let i = 0; i < 10; i++) pauseAfterFailure();
    expect(pauseAfterFailure()).toBe(32);
  });
});
