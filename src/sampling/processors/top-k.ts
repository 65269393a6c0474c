import type { LogitsProcessor } from '../logits-processor.js';
import { scratchFloat32 } from '../scratch.js';
import { kthLargest } from '../select.js';

/**
 * Keeps the k highest logits. Ties at the k-th value are all kept, as in vLLM 0.6
 * (it masks `logit < kth_value`), so more than k tokens may survive; the rule is
 * deterministic and independent of token order. k <= 0 or k >= vocabulary size disables.
 * Finds the k-th value by quickselect (O(vocab)) rather than a full sort.
 */
export class TopKProcessor implements LogitsProcessor {
  constructor(private readonly k: number) {}

  process(logits: Float32Array): void {
    const n = logits.length;
    if (this.k <= 0 || this.k >= n) return;
    const kth = kthLargest(logits, this.k, scratchFloat32('select', n));
    for (let i = 0; i < n; i++) {
      if (logits[i] < kth) logits[i] = -Infinity;
    }
  }
}
