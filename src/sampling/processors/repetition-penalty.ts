import type { LogitsProcessor } from '../logits-processor.js';
import type { TokenHistory } from '../token-history.js';

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
      logits[id] = logit > 0 ? logit / penalty : logit * penalty;
    }
  }
}
