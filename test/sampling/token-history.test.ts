import { describe, expect, it } from 'vitest';
import { TokenHistory } from '../../src/sampling/token-history.js';

const countsOf = (h: TokenHistory) => Object.fromEntries([...h.outputCounts].sort((a, b) => a[0] - b[0]));

describe('TokenHistory', () => {
  it('collects prompt ∪ output as seen, and counts output tokens only', () => {
    const h = TokenHistory.from({ promptTokenIds: [5, 5, 6], outputTokenIds: [6, 7, 7] });
    expect([...h.seen].sort()).toEqual([5, 6, 7]);
    expect(countsOf(h)).toEqual({ 6: 1, 7: 2 });
    expect(h.outputLength).toBe(3);
  });

  it('picks up appended tokens incrementally from a growing array', () => {
    const prompt = [1];
    const output: number[] = [];
    const h = new TokenHistory();
    h.sync({ promptTokenIds: prompt, outputTokenIds: output });
    expect(h.outputLength).toBe(0);
    output.push(2);
    h.sync({ promptTokenIds: prompt, outputTokenIds: output });
    output.push(2, 3);
    h.sync({ promptTokenIds: prompt, outputTokenIds: output });
    expect(countsOf(h)).toEqual({ 2: 2, 3: 1 });
    expect(h.outputLength).toBe(3);
    // Syncing again without new tokens changes nothing.
    h.sync({ promptTokenIds: prompt, outputTokenIds: output });
    expect(countsOf(h)).toEqual({ 2: 2, 3: 1 });
  });

  it('rebuilds when the output shrinks or the prompt changes', () => {
    const prompt = [1];
    const h = TokenHistory.from({ promptTokenIds: prompt, outputTokenIds: [2, 2, 2] });
    h.sync({ promptTokenIds: prompt, outputTokenIds: [4] });
    expect(countsOf(h)).toEqual({ 4: 1 });
    expect([...h.seen].sort()).toEqual([1, 4]);
    h.sync({ promptTokenIds: [9], outputTokenIds: [4] });
    expect([...h.seen].sort()).toEqual([4, 9]);
    expect(countsOf(h)).toEqual({ 4: 1 });
  });
});

describe('TokenHistory.append with sync', () => {
  it('counts a token once whether it arrives by append, by sync, or both', () => {
    const prompt = [1];
    const output: number[] = [];
    const h = new TokenHistory();
    h.sync({ promptTokenIds: prompt, outputTokenIds: output });
    output.push(5);
    h.append(5); // engine reports the token...
    h.sync({ promptTokenIds: prompt, outputTokenIds: output }); // ...and passes the grown array
    output.push(5, 6); // later tokens only via the array
    h.sync({ promptTokenIds: prompt, outputTokenIds: output });
    expect(countsOf(h)).toEqual({ 5: 2, 6: 1 });
    expect(h.outputLength).toBe(3);
  });
});
