import type { GuidedLimits } from './limits.js';
import type { GuidedDecodingRequest } from './request.js';
import type { TokenVocabulary } from './token-vocabulary.js';

/*
 * The wire format between the event loop and the guide thread (guide-thread.ts, Node
 * only). XGrammar's compiled grammar lives in the WebAssembly memory of the thread that
 * compiled it and cannot be handed to another (@mlc-ai/web-xgrammar binds no
 * serialization), so the grammar and every matcher on it stay on that thread: the loop
 * sends the constraint and each accepted token, and reads each step's token mask from a
 * SharedArrayBuffer the thread fills as soon as the token is accepted (while the model
 * runs its next step).
 */

/** A guide's shared slot: word 0 is its state, then the mask's words. */
export const SLOT_STATE = 0;
export const SLOT_MASK_OFFSET = 1;
/** The thread is computing the mask. */
export const MASK_PENDING = 0;
/** The mask is there. */
export const MASK_READY = 1;
/** The grammar failed (a rejected token, XGrammar trapped, the thread ended). */
export const MASK_FAILED = 2;

export type ToGuideThread =
  | { type: 'vocabulary'; vocabulary: TokenVocabulary }
  /** Turn the constraint into a grammar (our conversion and its bounds) and compile it. */
  | { type: 'compile'; id: number; request: GuidedDecodingRequest; limits: GuidedLimits }
  /** The loop dropped one of its references to a compiled grammar. */
  | { type: 'release'; grammar: number }
  /** A matcher at the start of the grammar, its first mask written to `slot`. */
  | { type: 'guide'; guide: number; grammar: number; slot: SharedArrayBuffer }
  /**
   * Advance each matcher past its token, then write its next mask (none once terminated):
   * [guide, token, guide, token, ...], every accept of a step in one message (waking a
   * sleeping thread costs the loop more than the message).
   */
  | { type: 'accept'; accepted: number[] }
  | { type: 'dispose'; guide: number };

export type FromGuideThread =
  | { type: 'compiled'; id: number; grammar: number; cpuMs: number }
  /** The constraint was refused: our bounds, or a grammar XGrammar could not take. */
  | { type: 'refused'; id: number; message: string; trapped: boolean }
  | { type: 'failed'; id: number; message: string }
  /** XGrammar's WebAssembly trapped: the thread ends after this; its state cannot be trusted. */
  | { type: 'trapped'; message: string };
