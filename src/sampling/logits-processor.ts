import type { TokenHistory } from './token-history.js';

/**
 * One step of the logits pipeline for one sequence (transformers.js style). Works in place
 * on a row of raw scores, one per vocabulary id; a banned token gets -Infinity.
 */
export interface LogitsProcessor {
  process(logits: Float32Array, history: TokenHistory): void;
}
