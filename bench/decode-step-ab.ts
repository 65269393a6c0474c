/**
 * A/B of one decode step across graph files and session options (issue #38 item 3): CPU time
 * per step (the process's user + system time, every thread onnxruntime runs included) and
 * wall time, interleaved in rounds with the order rotated, so a loaded machine's noise falls
 * on every case alike. Ratios between cases are the figure to read; absolute times only on a
 * quiet machine.
 *
 *   npx tsx bench/decode-step-ab.ts label=path.onnx[@threads] ...
 *   AB_ROWS=1 AB_PAST=128 AB_RUNS=40 AB_ROUNDS=6 npx tsx bench/decode-step-ab.ts ...
 *   npx tsx bench/decode-step-ab.ts --build=gqa-inplace,inplace   (writes the 135M-shaped q4 graphs first)
 *   AB_THREADS=1 npx tsx bench/decode-step-ab.ts --build=inplace,q4-chain   (q4-chain: the weight products alone)
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { convertCheckpoint } from '../src/convert/convert-llama2c-model.js';
import type { GraphOps } from '../src/graph/llama-onnx-graph.js';
import { buildGqaInplaceLlamaGraph } from '../src/graph/llama-graph-gqa.js';
import { encodeOnnxModel, ONNX_IR_VERSION, ONNX_OPSET } from '../src/graph/onnx-writer.js';
import { withLogitsToKeep } from '../src/graph/logits-to-keep.js';
import { LLAMA2C_RMS_NORM_EPS } from '../src/convert/hf-config.js';
import { applyWeightDtype, checkpointOnWeightGrid } from '../src/graph/weight-dtype.js';
import { stepFeeds } from './fp32-bound/feeds.js';
import { ensureMatMulChain } from './fp32-bound/matmul-chain.js';
import { benchModelCache, randomCheckpoint, SEED, SMOLLM2_135M_SHAPE, syntheticTokenizer } from './size-models.js';
import { median } from './stats.js';

const ROWS = Number(process.env.AB_ROWS ?? 1);
const PAST = Number(process.env.AB_PAST ?? 128);
const RUNS = Number(process.env.AB_RUNS ?? 30);
const ROUNDS = Number(process.env.AB_ROUNDS ?? 6);

/** Graphs besides the converter's flavours: `gqa-inplace` (llama-graph-gqa.ts). */
const EXTRA_GRAPHS = ['gqa-inplace'] as const;

/** The 135M-shaped q4 graph in a flavour, cached beside the bench model. */
export function flavourGraph(ops: GraphOps | (typeof EXTRA_GRAPHS)[number]): string {
  const dir = join(benchModelCache(), `decode-flavours-seed${SEED}`);
  const path = join(dir, `model_q4.${ops}.onnx`);
  if (existsSync(path)) return path;
  mkdirSync(dir, { recursive: true });
  const ckpt = randomCheckpoint(SEED);
  if (ops === 'gqa-inplace') {
    // As the converter writes a flavour (convert-llama2c-model.ts), with this builder.
    const built = withLogitsToKeep(buildGqaInplaceLlamaGraph(checkpointOnWeightGrid(ckpt, 'q4'), LLAMA2C_RMS_NORM_EPS));
    const graph = applyWeightDtype(built, 'q4');
    const model = { irVersion: ONNX_IR_VERSION, opsetVersion: ONNX_OPSET, producerName: 'decode-step-ab', producerVersion: '0' };
    writeFileSync(path, encodeOnnxModel({ ...model, graph, extraOpsets: { 'com.microsoft': 1 } }));
    return path;
  }
  const files = convertCheckpoint(ckpt, syntheticTokenizer(SMOLLM2_135M_SHAPE.vocabSize, SEED), { dtypes: ['q4'], ops });
  writeFileSync(path, files['onnx/model_q4.onnx']);
  return path;
}

/** `2s`: two threads spinning between kernels (intraOpSpinning); plain counts do not spin (the engine spins within a call by default since session 14). */
function sessionOptions(threadSpec: string): ort.InferenceSession.SessionOptions {
  const threads = parseInt(threadSpec, 10);
  return {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    ...(threads > 1 && !threadSpec.endsWith('s') ? { extra: { session: { intra_op: { allow_spinning: '0' } } } } : {}),
  };
}

async function main() {
  const args = process.argv.slice(2);
  const build = args.find((a) => a.startsWith('--build='));
  const threadsArg = process.env.AB_THREADS ? `@${process.env.AB_THREADS}` : '';
  const specs = args.filter((a) => !a.startsWith('--'));
  if (build) {
    for (const ops of build.slice('--build='.length).split(',')) {
      specs.push(`${ops}=${ops === 'q4-chain' ? ensureMatMulChain('q4') : flavourGraph(ops as GraphOps)}${threadsArg}`);
    }
  }
  const cases = [];
  for (const spec of specs) {
    const [label, rest] = spec.split('=');
    const [path, threadList = process.env.AB_THREADS ?? '1,2'] = rest.split('@');
    for (const threads of threadList.split(',')) {
      const session = await ort.InferenceSession.create(path, sessionOptions(threads));
      const feeds = stepFeeds(session.inputNames, ROWS, PAST);
      for (let i = 0; i < 3; i++) await session.run(feeds);
      cases.push({ label: `${label} @${threads}`, session, feeds, cpu: [] as number[], wall: [] as number[] });
    }
  }
  const before = loadavg();
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < cases.length; i++) {
      const c = cases[(i + round) % cases.length];
      for (let r = 0; r < RUNS; r++) {
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        await c.session.run(c.feeds);
        c.wall.push(performance.now() - t0);
        const cpu = process.cpuUsage(cpu0);
        c.cpu.push((cpu.user + cpu.system) / 1000);
      }
    }
  }
  const after = loadavg();
  console.log(`rows ${ROWS}, past ${PAST}, ${ROUNDS} rounds × ${RUNS} runs; load ${before[0].toFixed(1)} -> ${after[0].toFixed(1)} (loaded: ratios only)`);
  const base = cases[0];
  console.log('| case | CPU ms/step | wall ms/step | CPU ÷ first | wall ÷ first |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const c of cases) {
    const cpu = median(c.cpu);
    const wall = median(c.wall);
    console.log(`| ${c.label} | ${cpu.toFixed(2)} | ${wall.toFixed(2)} | ${(cpu / median(base.cpu)).toFixed(2)} | ${(wall / median(base.wall)).toFixed(2)} |`);
  }
  for (const c of cases) await c.session.release();
}

await main();
