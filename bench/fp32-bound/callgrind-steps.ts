/**
 * Instructions per decode step, which a loaded machine does not change (issue #28): each graph
 * runs under valgrind's callgrind with instrumentation off while the session loads and warms up,
 * on for `steps` one-row steps (switched by callgrind_control), so the count is the steps'
 * alone; per step = total ÷ steps. onnxruntime's library has no symbols, so this is a total
 * per graph, not per function: the step's graph against its weight MatMuls alone
 * (matmul-chain.ts) gives what the rest of the graph executes. With callgrind's cache
 * simulation (this machine's L1 and last-level sizes): data misses of the last level, the
 * step's DRAM traffic.
 *
 *   npx tsx bench/fp32-bound/callgrind-steps.ts [steps] [threads]      (default 3 steps, 1 thread)
 *
 * Slow: a 540 MB session loads in minutes under valgrind. With `child` it is the process
 * valgrind runs: it prints `ready` after warming up, steps on a line from stdin, prints `done`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { ensureBenchModel } from '../size-models.js';
import { stepFeeds } from './feeds.js';
import { ensureMatMulChain } from './matmul-chain.js';

const PAST = 24;

async function child(path: string, steps: number, threads: number): Promise<void> {
  const session = await ort.InferenceSession.create(path, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    ...(threads > 1 ? { extra: { session: { intra_op: { allow_spinning: '0' } } } } : {}),
  });
  const feeds = stepFeeds(session.inputNames, 1, PAST);
  await session.run(feeds);
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  console.log('ready');
  await lines.next();
  for (let i = 0; i < steps; i++) await session.run(feeds);
  console.log('done');
  await lines.next();
  process.exit(0);
}

interface Counts {
  /** Instructions executed. */
  ir: number;
  /** Data reads and writes that missed the simulated last-level cache (DRAM traffic, in lines). */
  lastLevelDataMisses: number;
}

/** What callgrind counted over one graph's `steps` steps (its summary on stderr). */
async function countSteps(path: string, steps: number, threads: number): Promise<Counts> {
  const dir = mkdtempSync(join(tmpdir(), 'callgrind-steps-'));
  const out = join(dir, 'callgrind.out');
  const script = fileURLToPath(import.meta.url);
  // `node --import tsx`, not tsx's CLI: that would start a second node, which valgrind would not follow.
  const proc = spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', '--cache-sim=yes', `--callgrind-out-file=${out}`, process.execPath, '--import', 'tsx', script, 'child', path, String(steps), String(threads)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let summary = '';
  proc.stderr!.on('data', (data: Buffer) => (summary = (summary + data.toString()).slice(-20_000)));
  const lines = createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
  const expect = async (word: string) => {
    for (;;) {
      const { value, done } = await lines.next();
      if (done) throw new Error(`valgrind exited before "${word}"`);
      if (value.trim() === word) return;
    }
  };
  const control = (state: 'on' | 'off') => {
    const run = spawnSync('callgrind_control', [`--instr=${state}`, String(proc.pid)], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`callgrind_control --instr=${state}: ${run.stdout}${run.stderr}`);
  };
  await expect('ready');
  control('on');
  proc.stdin!.write('\n');
  await expect('done');
  control('off');
  proc.stdin!.write('\n');
  await new Promise((resolve) => proc.once('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
  // "I   refs:      206,355,244" and "LLd misses:   8,412,345  (  1,234 rd   +  5,678 wr)".
  const count = (label: string) => Number(new RegExp(`${label}:\\s+([\\d,]+)`).exec(summary)?.[1].replaceAll(',', '') ?? NaN);
  const counts = { ir: count('I\\s+refs'), lastLevelDataMisses: count('LLd misses') };
  if (!Number.isFinite(counts.ir)) throw new Error(`no callgrind summary:\n${summary}`);
  return counts;
}

if (process.argv[2] === 'child') {
  await child(process.argv[3], Number(process.argv[4]), Number(process.argv[5]));
} else {
  const steps = Number(process.argv[2] ?? 3);
  const threads = Number(process.argv[3] ?? 1);
  const files = await ensureBenchModel();
  // CALLGRIND_GRAPHS=a.onnx,b.onnx: other graphs (the first is compared with the second).
  const graphs = process.env.CALLGRIND_GRAPHS
    ? process.env.CALLGRIND_GRAPHS.split(',').map((path) => ({ label: path, path }))
    : [
        { label: 'the step (model.inplace.onnx)', path: join(files.onnxDir, 'onnx', 'model.inplace.onnx') },
        { label: 'its 121 weight MatMuls alone (matmul-chain.ts)', path: ensureMatMulChain() },
      ];
  const perStep: Counts[] = [];
  for (const graph of graphs) {
    const total = await countSteps(graph.path, steps, threads);
    const step = { ir: total.ir / steps, lastLevelDataMisses: total.lastLevelDataMisses / steps };
    perStep.push(step);
    console.log(
      `${graph.label}, ${threads} thread${threads > 1 ? 's' : ''}: ${(step.ir / 1e6).toFixed(1)} M instructions, ` +
        `${(step.lastLevelDataMisses / 1e6).toFixed(2)} M last-level data misses (${((step.lastLevelDataMisses * 64) / 1e6).toFixed(0)} MB) a step (${steps} steps)`,
    );
  }
  const [step, chain] = perStep;
  console.log(
    `the rest of the step: ${((step.ir - chain.ir) / 1e6).toFixed(1)} M instructions (${((100 * (step.ir - chain.ir)) / step.ir).toFixed(1)}% of the step's), ` +
      `${((step.lastLevelDataMisses - chain.lastLevelDataMisses) / 1e6).toFixed(3)} M last-level data misses`,
  );
}
