import type { LogitsProcessor } from '../logits-processor.js';
import type { TokenHistory } from '../token-history.js';

/**
 * Penalized logits are kept within ±LOGIT_LIMIT: far beyond any model's logits, yet
 * small enough that the smallest sampling temperature (1e-5) still leaves them finite
 * in float32 (3.4e38).
 */
export const LOGIT_LIMIT = 1e30;

/**
 * CTRL-style repetition penalty as in vLLM: every token seen in the prompt or the output
 * (once, however often it occurred) gets logit / penalty when positive, logit * penalty
 * otherwise, so penalty > 1 always makes it less likely.
 */
export class RepetitionPenaltyProcessor implements LogitsProcessor {
  constructor(private readonly penalty: number) {}

  process(logits: Float32Array, history: TokenHistory): void {
    const penalty = this.penalty;
    for (const id of history.seen) {
      if (id < 0 || id >= logits.length) continue;
      const logit = logits[id];
      const penalized = logit > 0 ? logit / penalty : logit * penalty;
      // A tiny (denormal) or huge penalty would overflow: keep the row finite (a banned
      // token's -Infinity stays), so sampling never sees +Infinity or NaN from here.
      logits[id] = penalized > LOGIT_LIMIT ? LOGIT_LIMIT : penalized < -LOGIT_LIMIT && logit > -Infinity ? -LOGIT_LIMIT : penalized;
    }
  }
}
