import { promptPositionLogprob, type PromptTokenLogprob } from '../sampling/logprobs.js';
import { yieldToEventLoop } from '../threads/yield.js';

/**
 * Prompt logprobs (vLLM's prompt_logprobs, and echo with logprobs) over a prefill's
 * logits, a slice of positions at a time with the event loop let run between slices.
 * In one pass a long prompt held the loop for the whole of it: every position is a few
 * passes over the vocabulary (log-sum-exp, rank, top k), 0.1–0.5 s for a few hundred
 * positions of a 32 K–150 K vocabulary. The scheduler steps other requests meanwhile
 * (scheduler.ts, "preparing"), so a request that asks for them waits for its own
 * positions only. Same figures as promptLogprobs: the same function per position.
 *
 * A slice is sized by work (entries of the vocabulary read), not by a clock: workerd's
 * clock does not advance while code runs, and a deterministic slice is the same under load.
 */

/**
 * Vocabulary entries one slice covers: ~2–3 ms of CPU at the ~20 ns an entry costs with
 * 20 top alternatives (measured here: a 32 K vocabulary's 500 positions, 355 ms in one pass).
 * A slice is at least one position, so a 150 K–256 K vocabulary holds the loop 3–6 ms a slice.
 */
export const PROMPT_LOGPROBS_SLICE_ENTRIES = 128 * 1024;

/**
 * The prompt's logprobs as promptLogprobs computes them, in slices of at least one position.
 * Returns null when `abandoned()` says so between slices (the request went away).
 */
export async function promptLogprobsInSlices(
  logits: Float32Array,
  promptTokenIds: readonly number[],
  vocabSize: number,
  k: number,
  abandoned: () => boolean,
  sliceEntries = PROMPT_LOGPROBS_SLICE_ENTRIES,
): Promise<Array<PromptTokenLogprob | null> | null> {
  const perSlice = Math.max(1, Math.floor(sliceEntries / Math.max(1, vocabSize)));
  const out: Array<PromptTokenLogprob | null> = [null];
  for (let position = 1; position < promptTokenIds.length; ) {
    const end = Math.min(promptTokenIds.length, position + perSlice);
    for (; position < end; position++) out.push(promptPositionLogprob(logits, promptTokenIds, vocabSize, k, position));
    if (position < promptTokenIds.length) {
      await yieldToEventLoop();
      if (abandoned()) return null;
    }
  }
  return out;
}
