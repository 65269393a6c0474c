import type { LogitsProcessor } from '../logits-processor.js';
import type { TokenHistory } from '../token-history.js';

/**
 * Bans every token that would end the sequence until `minTokens` tokens were generated.
 * As in vLLM 0.6 (`all_stop_token_ids`), the banned set is the EOS ids plus
 * stop_token_ids, and it includes EOS even under ignore_eos.
 */
export class MinTokensProcessor implements LogitsProcessor {
  private readonly bannedIds: readonly number[];

  constructor(
    private readonly minTokens: number,
    stopTokenIds: Iterable<number>,
  ) {
    this.bannedIds = [...new Set(stopTokenIds)];
  }

  process(logits: Float32Array, history: TokenHistory): void {
    if (history.outputLength >= this.minTokens) return;
    for (const id of this.bannedIds) {
      if (id >= 0 && id < logits.length) logits[id] = -Infinity;
    }
  }
}
