import type { GuidedDecodingRequest } from './request.js';

/** What the Sampler needs from a guide: applied before every other logits processor. */
export interface LogitsMask {
  /** Sets the logit of every token the guide does not allow next to -Infinity. */
  maskLogits(logits: Float32Array): void;
  /**
   * The lowest allowed token id, or -1. The sampler falls back on it when later bans
   * (min_tokens) leave nothing to sample: the grammar allows nothing but ending.
   */
  firstAllowedToken(): number;
}

/**
 * The grammar state of one sequence. Each sequence needs its own (n > 1, batching); they
 * are cheap to create from a GuideFactory.
 */
export interface Guide extends LogitsMask {
  /**
   * Bitmask of the tokens allowed next: token i is allowed iff bit (i & 31) of word
   * i >>> 5 is set. Valid until the next `accept`; do not modify.
   */
  allowedMask(): Int32Array;
  isAllowed(tokenId: number): boolean;
  /** Advances past a sampled token; throws if the grammar does not allow it. */
  accept(tokenId: number): void;
  /** The grammar accepted a stop token: the output is complete. */
  isTerminated(): boolean;
  /** Frees the WebAssembly state; idempotent. */
  dispose(): void;
  /**
   * A guide whose grammar runs on another thread (guide-thread.ts): a promise that settles
   * once its next mask is there, or null when it is now. The engine awaits it before it
   * samples, so the event loop never waits for the thread. Inline guides have none.
   */
  pending?(): Promise<void> | null;
  /**
   * Whether a mask asked for after an accept() could wait behind a compile on the guide's
   * thread: a speculative step then takes no guesses from this guide (checking them asks
   * for masks at once).
   */
  busy?(): boolean;
}

/** A compiled grammar, shared by every sequence that uses it. */
export interface GuideFactory {
  readonly request: GuidedDecodingRequest;
  /** A fresh guide at the start of the output. Synchronous, so the engine can call it anywhere. */
  createGuide(): Guide;
}
