/**
 * What a generated token costs outside the model's graph (issue #38's per-token goals), for
 * the embedded stories260K or the 135M-shaped q4 bench model: the engine's greedy generation
 * (sampling, detokenizing, scheduling, KV bookkeeping, the model thread's messages) against
 * the same in-place graph's bare session.run, in alternating rounds in one process, CPU time
 * of every thread per token. A loaded machine moves both sides alike: read the difference
 * and the ratio, not the absolute figures.
 *
 *   npx tsx bench/per-token-cost.ts [stories260k|135m-q4] [tokens=128] [rounds=6] [main|worker|auto|main,worker] [threads]
 *
 * Several model-thread modes (comma-separated) make one engine each, measured in the same rounds.
 *
 * CPU_PROF=1 runs only the engine side (for `node --cpu-prof --import tsx`).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { defaultSamplingParams } from '../src/sampling/params.js';
import { ensureBenchModel } from './size-models.js';
import { median } from './stats.js';

const model = process.argv[2] ?? 'stories260k';
const [tokens, rounds] = [Number(process.argv[3] ?? 128), Number(process.argv[4] ?? 6)];
const modelThreadArg = process.argv[5] ?? 'auto';
const threadsArg = process.argv[6] === undefined ? undefined : Number(process.argv[6]);
const engineOnly = process.env.CPU_PROF === '1';

interface Subject {
  dir: string;
  dtype: 'fp32' | 'q4';
  graph: string;
  prompt: number[];
  shape: { layers: number; kvHeads: number; headDim: number };
}

async function subject(): Promise<Subject> {
  if (model === 'stories260k') {
    return {
      dir: fileURLToPath(new URL('../models/stories260k/', import.meta.url)),
      dtype: 'fp32',
      graph: 'model.inplace.onnx',
      prompt: Array.from({ length: 16 }, (_, i) => 259 + ((i * 17) % 253)),
      shape: { layers: 5, kvHeads: 4, headDim: 8 },
    };
  }
  const files = await ensureBenchModel();
  return {
    dir: files.onnxDir,
    dtype: 'q4',
    graph: 'model_q4.inplace.onnx',
    prompt: Array.from({ length: 8 }, (_, i) => files.promptTokenRange[0] + 17 * i),
    shape: { layers: 30, kvHeads: 3, headDim: 64 },
  };
}

const s = await subject();
const modes = modelThreadArg.split(',');
const engines = await Promise.all(
  modes.map((mode) =>
    createNodeEngine({
      modelDir: s.dir,
      dtype: s.dtype,
      ...(threadsArg === undefined ? {} : { intraOpNumThreads: threadsArg }),
      ...(mode === 'auto' ? {} : { modelThread: mode as 'main' | 'worker' }),
      limits: { speculativeDecoding: 'off' },
    }),
  ),
);
const threads = threadsArg ?? (s.dtype === 'q4' ? 2 : 1);
const session = await ort.InferenceSession.create(join(s.dir, 'onnx', s.graph), {
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  executionMode: 'sequential',
  ...(threads > 1 ? { extra: { session: { intra_op: { allow_spinning: '0' } } } } : {}),
});

/** One decode step's feeds at `past` cached slots (one row). */
function stepFeeds(past: number): Record<string, ort.Tensor> {
  const { kvHeads, headDim } = s.shape;
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', BigInt64Array.of(300n), [1, 1]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(past + 1).fill(1n), [1, past + 1]),
    position_ids: new ort.Tensor('int64', BigInt64Array.of(BigInt(past)), [1, 1]),
  };
  if (session.inputNames.includes('num_logits_to_keep')) feeds.num_logits_to_keep = new ort.Tensor('int64', BigInt64Array.of(1n), []);
  const kv = Float32Array.from({ length: kvHeads * past * headDim }, (_, i) => Math.sin(i) * 0.5);
  for (const name of session.inputNames) if (name.startsWith('past_key_values.')) feeds[name] = new ort.Tensor('float32', kv, [1, kvHeads, past, headDim]);
  return feeds;
}
const feeds = stepFeeds(s.prompt.length + Math.round(tokens / 2));

const perToken = async (work: () => Promise<number>) => {
  const cpu0 = process.cpuUsage();
  const count = await work();
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / 1000 / count;
};
const viaEngine = (engine: (typeof engines)[number]) => async () => {
  let n = 0;
  const params = defaultSamplingParams({ temperature: 0, maxTokens: tokens, ignoreEos: true });
  for await (const delta of engine.generate({ promptTokenIds: s.prompt, params })) n += delta.tokenIds.length;
  return n;
};
const bare = async () => {
  for (let i = 0; i < tokens; i++) await session.run(feeds);
  return tokens;
};
for (const engine of engines) await viaEngine(engine)();
await bare();
const results = { engine: modes.map(() => [] as number[]), bare: [] as number[] };
for (let round = 0; round < rounds; round++) {
  for (const [index, engine] of engines.entries()) results.engine[index].push(await perToken(viaEngine(engine)));
  if (!engineOnly) results.bare.push(await perToken(bare));
}
console.log(`${model}, ${threads} intra-op thread(s), ${tokens} tokens × ${rounds} rounds (loaded: read differences and ratios)`);
const b = engineOnly ? NaN : median(results.bare);
for (const [index, mode] of modes.entries()) {
  const e = median(results.engine[index]);
  console.log(
    `model thread ${mode}: engine (prompt included) ${e.toFixed(3)} ms CPU/token` +
      (engineOnly ? '' : `; bare graph step ${b.toFixed(3)}; outside the graph ${(e - b).toFixed(3)} ms (${((100 * (e - b)) / e).toFixed(0)}%)`),
  );
}
await session.release();
for (const engine of engines) await engine.dispose();
process.exit(0);
