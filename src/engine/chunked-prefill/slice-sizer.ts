/**
 * How many prompt tokens one slice of a chunked prefill feeds (scheduler.ts runs one slice
 * between two decode steps of the running rows).
 *
 * How peers do it, and what this engine chose:
 * - vLLM: a token budget per step (max_num_batched_tokens); decode rows are scheduled first,
 *   one token each, and waiting prompts fill the rest of the budget in chunks, all in one
 *   forward pass over a flat token list (its paged attention takes ragged rows).
 * - llama.cpp's server: one batch of up to n_batch tokens per iteration, each slot's decode
 *   token and a prompt's next chunk together, run in n_ubatch-token micro-batches.
 * Both mix a prompt's chunk with the decode tokens in one call because their KV is paged or
 * per-slot and their kernels take ragged rows. This engine's graphs take [rows, tokens]
 * inputs and a dense KV cache per batch ([rows, heads, slots, headDim]): mixing an 8-row
 * decode with a 64-token chunk would pad every decode row to 64 tokens. So a slice is its
 * own model call on the prompt's own cache (the prefix-cache path: "a past + the next
 * tokens"), between two decode steps, and the streams' pace is set by the slice's cost.
 *
 * The size, unless the long_prefill_token_threshold setting fixes it: a slice costing about
 * SLICE_SHARE of a decode step, from the step and slice times measured on this lane, so a
 * step with a slice takes at most about twice a plain one (issue #38's goal: the streams'
 * p99 inter-token latency ≤ 2× their median while a long prompt arrives), whatever the
 * model, batch or machine. Always within the step's token budget (max_num_batched_tokens
 * less a token per running row) and never under MIN_SLICE_TOKENS (a slice's fixed cost
 * would dominate). The price is the long prompt's time to first token: its prefill is
 * spread over as many steps as it has slices.
 */

/** A slice's target cost as a share of one decode step's. */
export const SLICE_SHARE = 0.9;
/** Fewer tokens per call and the call's fixed cost dominates. */
export const MIN_SLICE_TOKENS = 16;
/** The first slice, before any slice was timed. */
const FIRST_SLICE_TOKENS = 32;
/** Weight of the newest measurement in the running averages. */
const NEWEST_WEIGHT = 0.3;

export class SliceSizer {
  private stepMs: number | null = null;
  private msPerToken: number | null = null;

  constructor(
    /** The long_prefill_token_threshold setting: slices of this many tokens; 0 sizes them from measured times. */
    private readonly fixedTokens: number,
  ) {}

  /** A decode step of the lane's rows took `ms`. */
  stepTook(ms: number): void {
    this.stepMs = average(this.stepMs, ms);
  }

  /** A slice of `tokens` prompt tokens took `ms`. */
  sliceTook(tokens: number, ms: number): void {
    if (tokens <= 0) return;
    // ms per token of a slice, fixed cost included: slices err small rather than large.
    this.msPerToken = average(this.msPerToken, ms / tokens);
  }

  /** Tokens the next slice feeds, within `budget` (the step's token budget left). */
  sliceTokens(budget: number): number {
    const room = Math.max(1, budget);
    if (this.fixedTokens > 0) return Math.min(this.fixedTokens, room);
    let tokens = FIRST_SLICE_TOKENS;
    if (this.stepMs !== null && this.msPerToken !== null && this.msPerToken > 0) {
      tokens = Math.max(MIN_SLICE_TOKENS, Math.floor((this.stepMs * SLICE_SHARE) / this.msPerToken));
    }
    return Math.min(tokens, room);
  }
}

function average(previous: number | null, newest: number): number {
  return previous === null ? newest : previous * (1 - NEWEST_WEIGHT) + newest * NEWEST_WEIGHT;
}
