/**
 * One decode step of two graphs in alternation (argv[2], argv[3]: .onnx paths with the same
 * inputs), at the batch sizes given (argv[4], comma-separated), past length 32: e.g. the
 * in-place graph against a copy whose new_key_values.* leave as one packed output.
 */
import * as ort from 'onnxruntime-node';
import { loadavg } from 'node:os';

const options: ort.InferenceSession.SessionOptions = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential' };
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const sessions = [await ort.InferenceSession.create(process.argv[2], options), await ort.InferenceSession.create(process.argv[3], options)];
const past = 32;
for (const batch of (process.argv[4] ?? '1').split(',').map(Number)) {
  const feedsOf = (session: ort.InferenceSession) => {
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', new BigInt64Array(batch).fill(300n), [batch, 1]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(batch * (past + 1)).fill(1n), [batch, past + 1]),
      position_ids: new ort.Tensor('int64', new BigInt64Array(batch).fill(BigInt(past)), [batch, 1]),
    };
    if (session.inputNames.includes('num_logits_to_keep')) feeds.num_logits_to_keep = new ort.Tensor('int64', BigInt64Array.of(1n), []);
    for (const name of session.inputNames.filter((n) => n.startsWith('past_key_values'))) feeds[name] = new ort.Tensor('float32', new Float32Array(batch * 4 * past * 8), [batch, 4, past, 8]);
    return feeds;
  };
  const feeds = sessions.map(feedsOf);
  const burst = 40;
  const samples = sessions.map(() => [] as number[]);
  for (let round = 0; round < 80; round++) {
    for (let k = 0; k < 2; k++) {
      const i = (k + round) % 2;
      const start = performance.now();
      for (let n = 0; n < burst; n++) await sessions[i].run(feeds[i]);
      if (round >= 5) samples[i].push(((performance.now() - start) / burst) * 1000);
    }
  }
  const ratios = samples[1].map((v, r) => v / samples[0][r]);
  console.log(`batch ${batch}: first ${median(samples[0]).toFixed(1)} us, second ${median(samples[1]).toFixed(1)} us per step; second ÷ first ${median(ratios).toFixed(3)} (paired)`);
}
console.log(`load ${loadavg().map((l) => l.toFixed(2)).join(' / ')}`);
