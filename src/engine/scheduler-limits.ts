export type SpeculativeDecoding = 'off' | 'guided' | 'all';

/** How much work the step loop takes on at once (server config: MindIE-style batching limits). */
export interface SchedulerLimits {
  /** Sequences decoded together in one step. */
  maxRunningSequences: number;
  /**
   * Tokens one loop iteration may run through the model: one per running sequence plus
   * the prompts prefilled before the step. Bounds how long a burst of long prompts can
   * stall the running streams.
   */
  maxBatchedTokens: number;
  /**
   * The share of maxRunningSequences, in percent, that requests' extra sequences may hold
   * together: each client request's sequences beyond its first (n × prompts, best_of, the
   * beam width). The rest of the batch stays for requests' first sequences, so a request
   * with one sequence arriving beside wide ones starts at once (scheduler.ts).
   */
  maxExtraSequenceSlotPercent: number;
  /** Requests queued for admission; past it a request is refused at once (503). */
  maxWaitingRequests: number;
  /** A request still waiting for admission after this long is refused (503). */
  waitingDeadlineMs: number;
  /**
   * Speculative decoding by prompt lookup, for which sequences: structured-output ones
   * ("guided": JSON repeats its keys and punctuation, so guesses often hold), all, or none.
   * Output is unchanged; only the number of steps is.
   */
  speculativeDecoding: SpeculativeDecoding;
  /** Guessed tokens fed per sequence and step, checked by the same forward pass. */
  numSpeculativeTokens: number;
  /** Speculate only while at most this many sequences run (see batch-runner.ts). */
  speculativeMaxSequences: number;
  /**
   * Sequences of different requests share a model call. Off, or forced off at load for a
   * graph that cannot batch them correctly, one request runs per call (scheduler.ts).
   */
  crossRequestBatching: boolean;
  /** The server's maxSeqLen: the served context, below the model's (null: the model's). */
  maxSeqLen: number | null;
  /** Most bytes the KV cache may take (context-length.ts); kept prompt prefixes live in what the running batches leave. */
  kvCacheMemoryBytes: number;
  /**
   * Keep prompts' KV and reuse it for later prompts that start the same way (vLLM's
   * --enable-prefix-caching, on by default; prefix-cache/).
   */
  enablePrefixCaching: boolean;
  /**
   * A long prompt arriving while sequences decode is prefilled in slices between their steps
   * (vLLM's --enable-chunked-prefill, on by default; chunked-prefill/slice-sizer.ts).
   */
  enableChunkedPrefill: boolean;
  /** Tokens per slice of a chunked prefill; 0 sizes slices from measured step times (vLLM's --long-prefill-token-threshold). */
  longPrefillTokenThreshold: number;
}

export const DEFAULT_SCHEDULER_LIMITS: SchedulerLimits = {
  maxRunningSequences: 64,
  maxBatchedTokens: 8192,
  maxExtraSequenceSlotPercent: 50,
  maxWaitingRequests: 256,
  waitingDeadlineMs: 30_000,
  // Guided only: 1.5-1.7x there, while free text at high temperature loses up to 10% (NOTES.md).
  speculativeDecoding: 'guided',
  numSpeculativeTokens: 4,
  speculativeMaxSequences: 2,
  crossRequestBatching: true,
  maxSeqLen: null,
  kvCacheMemoryBytes: 8 * 1024 ** 3,
  enablePrefixCaching: true,
  enableChunkedPrefill: true,
  longPrefillTokenThreshold: 0,
};

/** Rows the requests' extra sequences may hold together (maxExtraSequenceSlotPercent of the batch), at least 1. */
export function extraSequenceSlots(maxRunningSequences: number, percent: number): number {
  return Math.max(1, Math.floor((maxRunningSequences * percent) / 100));
}
