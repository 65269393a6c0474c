import type { LogitsProcessor } from '../logits-processor.js';
import type { TokenHistory } from '../token-history.js';

/**
 * OpenAI's presence and frequency penalties, over generated tokens only (the prompt does
 * not count): logit -= presence * [count > 0] + frequency * count.
 */
export class PresenceFrequencyPenaltyProcessor implements LogitsProcessor {
  constructor(
    private readonly presencePenalty: number,
    private readonly frequencyPenalty: number,
  ) {}

  process(logits: Float32Array, history: TokenHistory): void {
    for (const [id, count] of history.outputCounts) {
      if (id < 0 || id >= logits.length) continue;
      logits[id] -= this.presencePenalty + this.frequencyPenalty * count;
    }
  }
}
