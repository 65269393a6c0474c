/**
 * Log-probabilities over one row of scores: log-softmax, the k best tokens and a token's
 * rank. Shared by the sampler (top alternatives per generated token), beam search
 * (candidates per beam) and prompt logprobs.
 */
/** A token with its log-probability. */
export interface TokenLogprob {
  tokenId: number;
  logprob: number;
}

/** One prompt position's logprobs (SamplingParams.promptLogprobs). */
export interface PromptTokenLogprob extends TokenLogprob {
  /** 1-based rank of the prompt token in the model's distribution at that position. */
  rank: number;
  /** The most likely tokens there, best first (rank i + 1 at index i). */
  top: TokenLogprob[];
}

/**
 * log(sum(exp(row))) computed stably, in float64; -Infinity when every entry is
 * -Infinity (everything banned). NaN entries count as banned.
 */
export function logSumExp(row: ArrayLike<number>): number {
  let max = -Infinity;
  for (let i = 0; i < row.length; i++) if (row[i] > max) max = row[i];
  if (max === -Infinity || max === Infinity) return max;
  let total = 0;
  for (let i = 0; i < row.length; i++) {
    const value = row[i];
    if (value > -Infinity) total += Math.exp(value - max);
  }
  return max + Math.log(total);
}

/** Replaces scores by their log-softmax, in place. Banned (-Infinity) entries stay -Infinity. */
export function logSoftmaxInPlace(row: Float32Array): Float32Array {
  const normalizer = logSumExp(row);
  for (let i = 0; i < row.length; i++) row[i] = row[i] - normalizer;
  return row;
}

/**
 * Ids of the `k` largest finite entries of `row`, best first; ties go to the lower id.
 * O(length + k · insertions) with a sorted buffer, which is what small k (top logprobs,
 * 2 × beam width) wants. Fewer than k when fewer entries are finite: a token that cannot
 * be sampled is nobody's alternative.
 */
export function topTokenIds(row: ArrayLike<number>, k: number): number[] {
  const ids: number[] = [];
  const values: number[] = [];
  if (k <= 0) return ids;
  for (let id = 0; id < row.length; id++) {
    const value = row[id];
    if (!(value > -Infinity) || value === Infinity) continue;
    if (ids.length === k && !(value > values[k - 1])) continue;
    // Insert after every entry >= value, so an earlier (lower) id wins a tie.
    let lo = 0;
    let hi = ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (values[mid] >= value) lo = mid + 1;
      else hi = mid;
    }
    ids.splice(lo, 0, id);
    values.splice(lo, 0, value);
    if (ids.length > k) {
      ids.pop();
      values.pop();
    }
  }
  return ids;
}

/**
 * The k most likely tokens of a row of scores, with their logprobs: `score - normalizer`
 * (pass logSumExp(row), or 0 when the row already holds log-probabilities).
 */
export function topLogprobs(row: ArrayLike<number>, k: number, normalizer = 0): TokenLogprob[] {
  return topTokenIds(row, k).map((tokenId) => ({ tokenId, logprob: row[tokenId] - normalizer }));
}

/** 1-based rank of `tokenId` in `row`: one more than the number of strictly larger entries (vLLM's rank). */
export function tokenRank(row: ArrayLike<number>, tokenId: number): number {
  const value = row[tokenId];
  let larger = 0;
  for (let i = 0; i < row.length; i++) if (row[i] > value) larger++;
  return larger + 1;
}

/**
 * Prompt logprobs from a prefill's logits ([promptLength, vocab], row i predicting
 * token i + 1): null for the first token, then each prompt token's logprob and rank
 * under the raw model distribution, with the `k` most likely tokens at that position.
 * One pass over every position; the engine runs it in slices (promptPositionLogprob).
 */
export function promptLogprobs(
  logits: Float32Array,
  promptTokenIds: readonly number[],
  vocabSize: number,
  k: number,
): Array<PromptTokenLogprob | null> {
  const out: Array<PromptTokenLogprob | null> = [null];
  for (let position = 1; position < promptTokenIds.length; position++) out.push(promptPositionLogprob(logits, promptTokenIds, vocabSize, k, position));
  return out;
}

/** Prompt position `position`'s (≥ 1) entry of promptLogprobs: a few passes over one row of the vocabulary. */
export function promptPositionLogprob(
  logits: Float32Array,
  promptTokenIds: readonly number[],
  vocabSize: number,
  k: number,
  position: number,
): PromptTokenLogprob {
  const row = logits.subarray((position - 1) * vocabSize, position * vocabSize);
  const normalizer = logSumExp(row);
  const tokenId = promptTokenIds[position];
  return {
    tokenId,
    logprob: row[tokenId] - normalizer,
    rank: tokenRank(row, tokenId),
    top: topLogprobs(row, k, normalizer),
  };
}
