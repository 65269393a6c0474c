import type { LogitsProcessor } from '../logits-processor.js';

/**
 * OpenAI's logit_bias: a fixed amount added to the raw score of given token ids, before
 * every other processor (vLLM applies it as a logits processor, ahead of penalties and
 * temperature). A banned token (-Infinity, from the grammar) stays banned.
 */
export class LogitBiasProcessor implements LogitsProcessor {
  private readonly ids: Int32Array;
  private readonly biases: Float32Array;

  constructor(bias: ReadonlyMap<number, number>) {
    this.ids = Int32Array.from(bias.keys());
    this.biases = Float32Array.from(bias.values());
  }

  process(logits: Float32Array): void {
    for (let i = 0; i < this.ids.length; i++) {
      const id = this.ids[i]!;
      if (id < logits.length) logits[id] += this.biases[i]!;
    }
  }
}
