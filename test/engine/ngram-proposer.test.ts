import { describe, expect, it } from 'vitest';
import { proposeNgramDraft } from '../../src/engine/ngram-proposer.js';

describe('proposeNgramDraft (prompt lookup)', () => {
  it('continues the latest earlier occurrence of the longest matching suffix', () => {
    // Suffix [7, 8] occurs at 1 (followed by 9, 10) and at 5 (followed by 11, 12): the later one wins.
    const prompt = [6, 7, 8, 9, 10, 7, 8, 11, 12];
    expect(proposeNgramDraft(prompt, [7, 8], 2)).toEqual([11, 12]);
    // A 3-token match beats a more recent 1-token one.
    expect(proposeNgramDraft([1, 2, 3, 4, 3, 9], [1, 2, 3], 3)).toEqual([4, 3, 9]);
  });

  it('looks across the prompt/output boundary and stops at the end of the context', () => {
    expect(proposeNgramDraft([5, 6], [7, 5, 6], 4)).toEqual([7, 5, 6]);
    expect(proposeNgramDraft([1, 2, 3], [1], 2)).toEqual([2, 3]);
  });

  it('honours maxTokens and the n-gram bounds, and proposes nothing without a match', () => {
    expect(proposeNgramDraft([1, 2, 3, 1], [], 1)).toEqual([2]);
    expect(proposeNgramDraft([1, 2, 3, 1], [], 0)).toEqual([]);
    expect(proposeNgramDraft([1, 2, 3, 4], [], 4)).toEqual([]);
    // Only a 1-token suffix matches: refused when at least 2 are required.
    expect(proposeNgramDraft([9, 1, 2, 3, 1], [], 4, { minN: 2, maxN: 3 })).toEqual([]);
    expect(proposeNgramDraft([9, 1, 2, 3, 1], [], 4, { minN: 1, maxN: 3 })).toEqual([2, 3, 1]);
  });
});
