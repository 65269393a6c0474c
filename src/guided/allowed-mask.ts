/**
 * A guide's allowed tokens as a bitmask (32 tokens a word, bit i of word w = token 32w + i,
 * XGrammar's layout): the reads both guides make of it, inline (xgrammar-guide.ts) and on a
 * guide thread's shared memory (guide-thread.ts).
 */

export function maskAllows(mask: Int32Array, vocabSize: number, tokenId: number): boolean {
  if (tokenId < 0 || tokenId >= vocabSize) return false;
  return (mask[tokenId >>> 5]! & (1 << (tokenId & 31))) !== 0;
}

/** Sets every logit the mask does not allow, and every one past the vocabulary, to -Infinity. */
export function applyMask(mask: Int32Array, vocabSize: number, logits: Float32Array): void {
  const n = Math.min(logits.length, vocabSize);
  for (let word = 0; word * 32 < n; word++) {
    const bits = mask[word]!;
    if (bits === -1) continue;
    const end = Math.min(n, word * 32 + 32);
    for (let id = word * 32; id < end; id++) if ((bits & (1 << (id & 31))) === 0) logits[id] = -Infinity;
  }
  logits.fill(-Infinity, n);
}

/** The lowest allowed token id, or -1 when the mask allows none. */
export function firstAllowed(mask: Int32Array): number {
  for (let word = 0; word < mask.length; word++) {
    if (mask[word] !== 0) return word * 32 + (31 - Math.clz32(mask[word]! & -mask[word]!));
  }
  return -1;
}
