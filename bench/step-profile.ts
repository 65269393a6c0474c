/**
 * Where one decode step of a 135M-shaped graph goes (issue #28): onnxruntime's profiler per
 * node, grouped by operator, beside the step's wall time in JavaScript. For each graph given:
 *
 *   npx tsx bench/step-profile.ts label=path.onnx [label=path.onnx ...]
 *   STEP_THREADS=1,2 STEP_ROWS=1 STEP_PAST=128 STEP_RUNS=40 STEP_ROUNDS=5 npx tsx bench/step-profile.ts ...
 *   STEP_THREADS=1,2,2s ...   (`2s`: 2 threads with onnxruntime's default spinning)
 *   STEP_TOKENS=808 STEP_PAST=0 ...   (a cold prefill of 808 tokens instead of a decode step)
 *
 * Per graph and thread count, two sessions run in alternation (rounds, order rotated):
 * - a plain one (the engine's options: no spinning above one thread): the wall time of
 *   `run()` in JavaScript, which is what a step costs;
 * - a profiling one: per run, the sum of node times ("in kernels", by operator), the
 *   session's own model_run time, and so the time between nodes (model_run − kernels:
 *   scheduling, allocation, thread-pool hand-offs) and around the run (wall − model_run:
 *   feeding, binding and copying outputs out, measured on the plain session's wall).
 * The profiler adds a little per node, so its model_run is a little above the plain wall's
 * share; the split is what the step is made of, not an exact sum.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { stepFeeds } from './fp32-bound/feeds.js';
import { median } from './stats.js';

/** Thread counts; a trailing `s` keeps onnxruntime's spin-waiting on (the engine turns it off above one thread). */
const THREADS = (process.env.STEP_THREADS ?? '1,2').split(',').map((t) => ({ threads: parseInt(t, 10), spinning: t.endsWith('s') }));
const ROWS = Number(process.env.STEP_ROWS ?? 1);
const PAST = Number(process.env.STEP_PAST ?? 128);
/** New tokens per row: 1 for a decode step, a prompt's length (with STEP_PAST=0) for a prefill. */
const TOKENS = Number(process.env.STEP_TOKENS ?? 1);
const RUNS = Number(process.env.STEP_RUNS ?? 30);
const ROUNDS = Number(process.env.STEP_ROUNDS ?? 5);

interface ProfileEvent {
  cat: string;
  name: string;
  ts: number;
  dur: number;
  args?: { op_name?: string };
}

/**
 * A node's operator; a MatMul over a weight (the converter's projections and the head, by node
 * name) apart from the attention's activation-by-activation products.
 */
function opOf(node: ProfileEvent): string {
  const op = node.args?.op_name ?? '?';
  return op === 'MatMul' && /_proj\/|lm_head\//.test(node.name) ? 'MatMul (weights)' : op;
}

/** Per model_run: the node times inside it, summed per operator, and the run's own duration. */
function runsOf(events: ProfileEvent[]): Array<{ runUs: number; byOp: Map<string, number>; nodes: number }> {
  const runs = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts);
  const nodes = events.filter((e) => e.cat === 'Node' && e.name.endsWith('_kernel_time')).sort((a, b) => a.ts - b.ts);
  let at = 0;
  return runs.map((run) => {
    const byOp = new Map<string, number>();
    let count = 0;
    while (at < nodes.length && nodes[at].ts < run.ts) at++;
    while (at < nodes.length && nodes[at].ts <= run.ts + run.dur) {
      const node = nodes[at++];
      const op = opOf(node);
      byOp.set(op, (byOp.get(op) ?? 0) + node.dur);
      count++;
    }
    return { runUs: run.dur, byOp, nodes: count };
  });
}

async function main() {
  const graphs = process.argv.slice(2).map((arg) => {
    const [label, path] = arg.split('=');
    return { label, path };
  });
  if (graphs.length === 0) throw new Error('usage: npx tsx bench/step-profile.ts label=model.onnx ...');
  const workDir = join(tmpdir(), `step-profile-${process.pid}`);
  const options = ({ threads, spinning }: (typeof THREADS)[number]): ort.InferenceSession.SessionOptions => ({
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    ...(threads > 1 && !spinning ? { extra: { session: { intra_op: { allow_spinning: '0' } } } } : {}),
  });
  const cases: Array<{ label: string; threads: number; spinning: boolean; plain: ort.InferenceSession; profiled: ort.InferenceSession; profileDir: string; feeds: Record<string, ort.Tensor>; wall: number[] }> = [];
  for (const { label, path } of graphs) {
    for (const config of THREADS) {
      const { threads, spinning } = config;
      const profileDir = join(workDir, `${cases.length}`);
      mkdirSync(profileDir, { recursive: true });
      const plain = await ort.InferenceSession.create(path, options(config));
      const profiled = await ort.InferenceSession.create(path, { ...options(config), enableProfiling: true, profileFilePrefix: join(profileDir, 'p') });
      const feeds = stepFeeds(plain.inputNames, ROWS, PAST, TOKENS);
      for (let i = 0; i < 3; i++) {
        await plain.run(feeds);
        await profiled.run(feeds);
      }
      cases.push({ label, threads, spinning, plain, profiled, profileDir, feeds, wall: [] });
    }
  }
  const loadBefore = loadavg();
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < cases.length; i++) {
      const c = cases[(i + round) % cases.length];
      for (let r = 0; r < RUNS; r++) {
        const started = performance.now();
        await c.plain.run(c.feeds);
        c.wall.push((performance.now() - started) * 1000);
      }
      for (let r = 0; r < RUNS; r++) await c.profiled.run(c.feeds);
    }
  }
  const loadAfter = loadavg();
  console.log(`rows ${ROWS}, past ${PAST}, new tokens ${TOKENS}, ${ROUNDS} rounds × ${RUNS} runs; load average ${loadBefore.map((x) => x.toFixed(1)).join(' ')} -> ${loadAfter.map((x) => x.toFixed(1)).join(' ')}`);
  for (const c of cases) {
    c.profiled.endProfiling();
    const file = join(c.profileDir, readdirSync(c.profileDir)[0]);
    const runs = runsOf(JSON.parse(readFileSync(file, 'utf8')) as ProfileEvent[]).slice(3); // the warm-up runs first
    const ops = [...new Set(runs.flatMap((r) => [...r.byOp.keys()]))];
    const opMedian = new Map(ops.map((op) => [op, median(runs.map((r) => r.byOp.get(op) ?? 0))]));
    const kernels = median(runs.map((r) => [...r.byOp.values()].reduce((a, b) => a + b, 0)));
    const modelRun = median(runs.map((r) => r.runUs));
    const between = median(runs.map((r) => r.runUs - [...r.byOp.values()].reduce((a, b) => a + b, 0)));
    const wall = median(c.wall);
    const nodes = runs[0]?.nodes ?? 0;
    const nodeCounts = countNodesPerOp(JSON.parse(readFileSync(file, 'utf8')) as ProfileEvent[], runs.length + 3);
    console.log(`\n### ${c.label}, ${c.threads} thread${c.threads > 1 ? 's' : ''}${c.spinning ? ', spinning' : ''}: step ${(wall / 1000).toFixed(2)} ms wall (plain session), ${nodes} nodes`);
    console.log('| part | µs per step | share of wall | nodes |');
    console.log('| --- | --- | --- | --- |');
    const row = (name: string, us: number, count = '') => console.log(`| ${name} | ${us.toFixed(0)} | ${((100 * us) / wall).toFixed(0)}% | ${count} |`);
    for (const op of ops.sort((a, b) => opMedian.get(b)! - opMedian.get(a)!)) row(`kernel ${op}`, opMedian.get(op)!, String(nodeCounts.get(op) ?? ''));
    row('**in kernels (sum)**', kernels, String(nodes));
    row('between nodes (model_run − kernels, profiled)', between);
    row('around the run (plain wall − profiled model_run)', Math.max(0, wall - modelRun));
    console.log(`(profiled model_run ${(modelRun / 1000).toFixed(2)} ms; outside kernels = wall − kernels = ${((wall - kernels) / 1000).toFixed(2)} ms)`);
    await c.plain.release();
    await c.profiled.release();
  }
  rmSync(workDir, { recursive: true, force: true });
}

/** Nodes per operator in one run (the profile's node events ÷ runs). */
function countNodesPerOp(events: ProfileEvent[], runs: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const op = opOf(e);
    counts.set(op, (counts.get(op) ?? 0) + 1);
  }
  return new Map([...counts].map(([op, n]) => [op, Math.round(n / runs)]));
}

await main();
