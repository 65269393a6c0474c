/**
 * onnxruntime-node's fixed cost per `session.run`: trivial graphs (bench/ort-trivial-graphs.py:
 * n inputs, n outputs or a chain of k nodes) in a folder (argv[2]), timed in
 * alternation in this process; per graph the median over rounds of the mean of a burst.
 * Also the embedded model's in-place graph at one row (argv[3] = its .onnx; argv[4] past
 * slots, default 20), with and without output fetches for the cache and with outputs into
 * pre-allocated tensors, to split the step into I/O and kernels.
 */
import * as ort from 'onnxruntime-node';
import { readdirSync } from 'node:fs';
import { loadavg } from 'node:os';

const folder = process.argv[2];
const options: ort.InferenceSession.SessionOptions = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential' };
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

interface Case { label: string; run(): Promise<unknown> }
const cases: Case[] = [];
for (const file of readdirSync(folder).filter((f) => f.endsWith('.onnx')).sort()) {
  const session = await ort.InferenceSession.create(`${folder}/${file}`, options);
  const feeds = Object.fromEntries(session.inputNames.map((name) => [name, new ort.Tensor('float32', new Float32Array(4 * 20 * 8), [1, 4, 20, 8])]));
  cases.push({ label: file, run: () => session.run(feeds) });
}
if (process.argv[3]) {
  const session = await ort.InferenceSession.create(process.argv[3], options);
  const past = Number(process.argv[4] ?? 20);
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', BigInt64Array.of(300n), [1, 1]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(past + 1).fill(1n), [1, past + 1]),
    position_ids: new ort.Tensor('int64', BigInt64Array.of(BigInt(past)), [1, 1]),
  };
  // Our graphs take num_logits_to_keep as a required input (a decode step keeps one position).
  if (session.inputNames.includes('num_logits_to_keep')) feeds.num_logits_to_keep = new ort.Tensor('int64', BigInt64Array.of(1n), []);
  for (const name of session.inputNames.filter((n) => n.startsWith('past_key_values'))) feeds[name] = new ort.Tensor('float32', new Float32Array(4 * past * 8), [1, 4, past, 8]);
  cases.push({ label: 'model, all outputs', run: () => session.run(feeds) });
  cases.push({ label: 'model, logits only', run: () => session.run(feeds, ['logits']) });
  // Outputs into tensors made once (the `fetches` form): whether onnxruntime-node's per-run output allocation costs.
  const first = await session.run(feeds);
  const preallocated = Object.fromEntries(session.outputNames.map((name) => [name, new ort.Tensor('float32', new Float32Array((first[name].data as Float32Array).length), first[name].dims)]));
  cases.push({ label: 'model, preallocated', run: () => session.run(feeds, preallocated) });
}
const burst = 50;
const samples = cases.map(() => [] as number[]);
for (let round = 0; round < 60; round++) {
  for (const [i, c] of cases.entries()) {
    const start = performance.now();
    for (let k = 0; k < burst; k++) await c.run();
    if (round >= 5) samples[i].push(((performance.now() - start) / burst) * 1000);
  }
}
for (const [i, c] of cases.entries()) console.log(`${c.label.padEnd(22)} median ${median(samples[i]).toFixed(1)} us, min ${Math.min(...samples[i]).toFixed(1)} us per run`);
console.log(`load ${loadavg().map((l) => l.toFixed(2)).join(' / ')}`);
