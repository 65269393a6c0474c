import type { LogitsProcessor } from '../logits-processor.js';

/** Divides every logit by the temperature (> 0; greedy decoding never gets here). */
export class TemperatureProcessor implements LogitsProcessor {
  constructor(private readonly temperature: number) {
    if (!(temperature > 0)) throw new RangeError(`temperature must be > 0, got ${temperature}`);
  }

  process(logits: Float32Array): void {
    const t = this.temperature;
    for (let i = 0; i < logits.length; i++) logits[i] /= t;
  }
}
