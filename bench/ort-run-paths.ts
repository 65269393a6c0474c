/**
 * onnxruntime-node's cost around one small model call, by path (issue #38: stories260K's step is
 * mostly fixed cost): the public `session.run` (onnxruntime-common's checks, a setImmediate
 * hop, a Promise, outputs re-wrapped) against the addon's own synchronous run on the same
 * graph and feeds. CPU per call, alternating rounds (loaded: read the ratio).
 *
 *   npx tsx bench/ort-run-paths.ts [calls=2000] [rounds=7] [past=80]
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { median } from './stats.js';

const [calls, rounds, past] = [Number(process.argv[2] ?? 2000), Number(process.argv[3] ?? 7), Number(process.argv[4] ?? 80)];
const path = fileURLToPath(new URL('../models/stories260k/onnx/model.inplace.onnx', import.meta.url));
const options = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential' } as const;
const session = await ort.InferenceSession.create(path, options);
const require = createRequire(import.meta.url);
const { binding } = require('onnxruntime-node/dist/binding.js') as { binding: { InferenceSession: new () => { loadModel(p: string, o: object): void; run(f: object, o: object): Record<string, ort.Tensor> } } };
const native = new binding.InferenceSession();
native.loadModel(path, options);

const feeds: Record<string, ort.Tensor> = {
  input_ids: new ort.Tensor('int64', BigInt64Array.of(300n), [1, 1]),
  attention_mask: new ort.Tensor('int64', new BigInt64Array(past + 1).fill(1n), [1, past + 1]),
  position_ids: new ort.Tensor('int64', BigInt64Array.of(BigInt(past)), [1, 1]),
  num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.of(1n), []),
};
const kv = Float32Array.from({ length: 4 * past * 8 }, (_, i) => Math.sin(i) * 0.5);
for (const name of session.inputNames) if (name.startsWith('past_key_values.')) feeds[name] = new ort.Tensor('float32', kv, [1, 4, past, 8]);
const fetches = Object.fromEntries(session.outputNames.map((name) => [name, null]));

const cpuPerCall = async (work: () => Promise<void>) => {
  const cpu0 = process.cpuUsage();
  await work();
  const cpu = process.cpuUsage(cpu0);
  return ((cpu.user + cpu.system) / calls);
};
// Outputs written into buffers of ours (onnxruntime-node binds a fetched tensor as the output).
const preallocated = {
  logits: new ort.Tensor('float32', new Float32Array(512), [1, 1, 512]),
  new_key_values: new ort.Tensor('float32', new Float32Array(10 * 4 * 8), [10, 4, 1, 8]),
};
const cases: Record<string, () => Promise<void>> = {
  'session.run, outputs preallocated': async () => {
    for (let i = 0; i < calls; i++) await session.run(feeds, preallocated);
  },
  'session.run (public)': async () => {
    for (let i = 0; i < calls; i++) await session.run(feeds);
  },
  'addon run (sync)': async () => {
    for (let i = 0; i < calls; i++) native.run(feeds, fetches);
  },
  'addon run + setImmediate': async () => {
    for (let i = 0; i < calls; i++) {
      native.run(feeds, fetches);
      await new Promise((resolve) => setImmediate(resolve));
    }
  },
};
const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, [] as number[]]));
for (let round = 0; round < rounds; round++) for (const [name, work] of Object.entries(cases)) samples[name].push(await cpuPerCall(work));
const base = median(samples['session.run (public)']);
for (const [name, values] of Object.entries(samples)) console.log(`${name.padEnd(28)} ${median(values).toFixed(1)} µs CPU a call (${(median(values) / base).toFixed(3)})`);
