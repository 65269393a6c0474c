import type { LogitsProcessor } from '../logits-processor.js';

/**
 * Drops tokens whose probability is below minP times the most likely token's probability.
 * Since p_i / p_max = exp(logit_i - logit_max), that is logit_i - logit_max < ln(minP):
 * no softmax needed. minP <= 0 disables.
 */
export class MinPProcessor implements LogitsProcessor {
  constructor(private readonly minP: number) {}

  process(logits: Float32Array): void {
    if (!(this.minP > 0)) return;
    let max = -Infinity;
    for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
    if (max === -Infinity) return;
    const logMinP = Math.log(this.minP);
    for (let i = 0; i < logits.length; i++) {
      if (logits[i] - max < logMinP) logits[i] = -Infinity;
    }
  }
}
