/**
 * Spike, nothing served (issue #38, stories260K one request): what the embedded model's token
 * would cost if the main-thread engine called onnxruntime-node's addon synchronously (no
 * setImmediate hop, no onnxruntime-common wrapper: a private path of onnxruntime-node 1.30)
 * and the step loop yielded once per 5 ms slice instead of once per step (the page's policy,
 * forced here by hiding setImmediate from the step loop), and the addon's sync run with a yield
 * every step (the policy on Node today, without the run's own hop). Two engines in one process,
 * alternating rounds, CPU per token; the greedy ids of both are compared.
 *   npx tsx bench/sync-run-spike.ts [tokens=128] [rounds=8]
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { LocalEngine } from '../src/engine/local-engine.js';
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { defaultSamplingParams } from '../src/sampling/params.js';
import { median } from './stats.js';

const [tokens, rounds] = [Number(process.argv[2] ?? 128), Number(process.argv[3] ?? 8)];
const modelDir = fileURLToPath(new URL('../models/stories260k/', import.meta.url));
const path = `${modelDir}onnx/model.inplace.onnx`;
const options = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential' };
const engines = {
  public: await createNodeEngine({ modelDir, dtype: 'fp32', modelThread: 'main', limits: { speculativeDecoding: 'off' } }),
  'addon sync + 5 ms slice': await createNodeEngine({ modelDir, dtype: 'fp32', modelThread: 'main', limits: { speculativeDecoding: 'off' } }),
};
const require = createRequire(import.meta.url);
const { binding, initOrt } = require('onnxruntime-node/dist/binding.js') as {
  initOrt(): void;
  binding: { InferenceSession: new () => { loadModel(path: string, options: object): void; run(feeds: object, fetches: object): object; outputMetadata: { name: string }[] } };
};
initOrt();
const native = new binding.InferenceSession();
native.loadModel(path, options);
const fetches = Object.fromEntries(native.outputMetadata.map(({ name }) => [name, null]));
const session = (engines['addon sync + 5 ms slice'] as unknown as { decoder: { session: { run: (feeds: object) => Promise<object> } } }).decoder.session;
session.run = (feeds) => Promise.resolve(native.run(feeds, fetches));

const setImmediateOfNode = globalThis.setImmediate;
const generate = async (engine: LocalEngine, slice: boolean) => {
  if (slice) (globalThis as { setImmediate?: unknown }).setImmediate = undefined;
  try {
    const ids: number[] = [];
    const params = defaultSamplingParams({ temperature: 0, maxTokens: tokens, ignoreEos: true });
    const cpu0 = process.cpuUsage();
    for await (const delta of engine.generate({ promptTokenIds: Array.from({ length: 16 }, (_, i) => 259 + ((i * 17) % 253)), params })) ids.push(...delta.tokenIds);
    const cpu = process.cpuUsage(cpu0);
    return { ids, msPerToken: (cpu.user + cpu.system) / 1000 / ids.length };
  } finally {
    globalThis.setImmediate = setImmediateOfNode;
  }
};
const samples: Record<string, number[]> = { public: [], 'addon sync, yield a step': [], 'addon sync + 5 ms slice': [] };
let same = true;
for (let round = 0; round < rounds + 1; round++) {
  const a = await generate(engines.public, false);
  const b = await generate(engines['addon sync + 5 ms slice'], true);
  const c = await generate(engines['addon sync + 5 ms slice'], false);
  same &&= a.ids.join() === b.ids.join() && a.ids.join() === c.ids.join();
  if (round === 0) continue;
  samples.public.push(a.msPerToken);
  samples['addon sync + 5 ms slice'].push(b.msPerToken);
  samples['addon sync, yield a step'].push(c.msPerToken);
}
const base = median(samples.public);
for (const [name, values] of Object.entries(samples)) console.log(`${name.padEnd(26)} ${median(values).toFixed(3)} ms CPU a token (${(median(values) / base).toFixed(3)})`);
console.log(`greedy ids equal: ${same}`);
process.exit(0);
