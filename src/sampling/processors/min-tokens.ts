import type { LogitsProcessor } from '../logits-processor.js';
import type { TokenHistory } from '../token-history.js';

/**
 * Bans every token that would end the sequence until `minTokens` tokens were generated.
 * As in vLLM 0.6 (`all_stop_token_ids`), the banned set is the EOS ids plus
 * stop_token_ids, and it includes EOS even under ignore_eos.
 */
export class MinTokensProcessor implements LogitsProcessor {
  private readonly bannedIds: ArrayLike<number>;

  /** `stopTokenIds`: an Int32Array is taken as it is (distinct, shared by a request's sequences: src/sampling/shared-id-sets.ts). */
  constructor(
    private readonly minTokens: number,
    stopTokenIds: Iterable<number> | Int32Array,
  ) {
    this.bannedIds = stopTokenIds instanceof Int32Array ? stopTokenIds : [...new Set(stopTokenIds)];
  }

  process(logits: Float32Array, history: TokenHistory): void {
    if (history.outputLength >= this.minTokens) return;
    const banned = this.bannedIds;
    for (let i = 0; i < banned.length; i++) {
      const id = banned[i]!;
      if (id >= 0 && id < logits.length) logits[id] = -Infinity;
    }
  }
}
