/**
 * Prompt-lookup drafting (vLLM's "ngram" speculative method): find the most recent
 * earlier place where the sequence's last n tokens occurred, and guess that what followed
 * them then follows them again. Free to compute, and right surprisingly often: stories
 * repeat names and phrases, JSON repeats keys, answers quote their prompt.
 *
 * The guess only decides which tokens the next forward pass feeds; every token still
 * comes from the model's own logits (see sequence-group.ts), so output never depends on
 * whether a guess was right.
 */
export interface NgramOptions {
  /** Longest suffix to look up; longer matches are tried first. */
  maxN: number;
  /** Shortest suffix worth a guess. */
  minN: number;
}

export const DEFAULT_NGRAM_OPTIONS: NgramOptions = { maxN: 3, minN: 1 };

/**
 * Up to `maxTokens` draft tokens continuing `prefix ++ tail` (a sequence's prompt and its
 * output so far, kept apart so nothing is concatenated per step). Empty when no suffix of
 * length minN..maxN occurred earlier.
 */
export function proposeNgramDraft(
  prefix: readonly number[],
  tail: readonly number[],
  maxTokens: number,
  options: NgramOptions = DEFAULT_NGRAM_OPTIONS,
): number[] {
  const length = prefix.length + tail.length;
  const at = (index: number) => (index < prefix.length ? prefix[index] : tail[index - prefix.length]);
  if (maxTokens <= 0) return [];
  for (let n = Math.min(options.maxN, length - 1); n >= options.minN; n--) {
    const suffixStart = length - n;
    // Latest occurrence first: recent text predicts the next tokens best.
    for (let start = suffixStart - 1; start >= 0; start--) {
      let matched = 0;
      while (matched < n && at(start + matched) === at(suffixStart + matched)) matched++;
      if (matched < n) continue;
      const draft: number[] = [];
      for (let index = start + n; index < length && draft.length < maxTokens; index++) draft.push(at(index));
      return draft;
    }
  }
  return [];
}
