/**
 * What a generated token costs the engine beyond its graph step (issue #38 item 3): the
 * 135M-shaped q4 model through createNodeEngine (sampling, scheduling, KV bookkeeping, the
 * model thread's messages) against the same in-place graph's bare session.run, in
 * alternating rounds in one process, CPU time (every thread) per token. Loaded machine:
 * ratios only.
 *
 *   npx tsx bench/decode-engine-overhead.ts [threads=1] [tokens=128] [rounds=4] [main|worker]
 */
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { defaultSamplingParams } from '../src/sampling/params.js';
import { stepFeeds } from './fp32-bound/feeds.js';
import { ensureBenchModel } from './size-models.js';
import { median } from './stats.js';

const [threads = 1, tokens = 128, rounds = 4] = process.argv.slice(2, 5).map(Number);
const modelThread = process.argv[5] === 'worker' ? 'worker' : 'main';
const files = await ensureBenchModel();
const engine = await createNodeEngine({ modelDir: files.onnxDir, dtype: 'q4', intraOpNumThreads: threads, modelThread, limits: { speculativeDecoding: 'off' } });
const session = await ort.InferenceSession.create(join(files.onnxDir, 'onnx', 'model_q4.inplace.onnx'), {
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  executionMode: 'sequential',
  ...(threads > 1 ? { extra: { session: { intra_op: { allow_spinning: '0' } } } } : {}),
});
const prompt = Array.from({ length: 8 }, (_, i) => files.promptTokenRange[0] + 17 * i);
const feeds = stepFeeds(session.inputNames, 1, prompt.length + Math.round(tokens / 2));

const perToken = async (work: () => Promise<number>) => {
  const cpu0 = process.cpuUsage();
  const count = await work();
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / 1000 / count;
};
const viaEngine = async () => {
  let n = 0;
  const params = defaultSamplingParams({ temperature: 0, maxTokens: tokens, ignoreEos: true });
  for await (const delta of engine.generate({ promptTokenIds: prompt, params })) n += delta.tokenIds.length;
  return n;
};
const bare = async () => {
  for (let i = 0; i < tokens; i++) await session.run(feeds);
  return tokens;
};
await viaEngine();
await bare();
const results = { engine: [] as number[], bare: [] as number[] };
for (let round = 0; round < rounds; round++) {
  results.engine.push(await perToken(viaEngine));
  results.bare.push(await perToken(bare));
}
const e = median(results.engine);
const b = median(results.bare);
console.log(`${threads} thread(s), model thread ${modelThread}, ${tokens} tokens × ${rounds} rounds (loaded: ratios only)`);
console.log(`engine (prompt of 8 included): ${e.toFixed(2)} ms CPU/token; bare graph step: ${b.toFixed(2)}; outside the graph: ${(e - b).toFixed(2)} ms (${((100 * (e - b)) / e).toFixed(0)}%)`);
await session.release();
await engine.dispose();
process.exit(0);
