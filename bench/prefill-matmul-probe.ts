/**
 * Issue #38, cold prefill: the q4 graph's weight products at M = 808 on other onnxruntime
 * kernels, onnxruntime-node alone, the bench model's real weights. Graphs from
 * scripts/prefill/build-variants.py (q4 = the served graph, MatMulNBits accuracy_level 4).
 *
 *   npx tsx bench/prefill-matmul-probe.ts [dir]      # default ~/.cache/edge-llm/bench-models/prefill-variants-seed135
 *   PROBE_M=808 PROBE_THREADS=1,2 PROBE_ROUNDS=9 PROBE_PART=layer,graph PROBE_VARIANTS=q4,fp32,dqmm ...
 *
 * Every variant × thread count is a session loaded up front; each round runs every session once
 * (order rotated), so load moves all of them alike. Per case: median wall and median process CPU
 * (user + system over every thread) per call, and their ratio to q4 at the same thread count;
 * RSS growth when the session was made.
 */
import { existsSync } from 'node:fs';
import { homedir, loadavg } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { stepFeeds } from './fp32-bound/feeds.js';
import { formatTable, median } from './stats.js';

const DIR = process.argv[2] ?? join(homedir(), '.cache/edge-llm/bench-models/prefill-variants-seed135');
const SERVED = join(homedir(), '.cache/edge-llm/bench-models/smollm2-135m-shape-seed135-v7/hf/onnx/model_q4.inplace.onnx');
const M = Number(process.env.PROBE_M ?? 808);
const THREADS = (process.env.PROBE_THREADS ?? '1,2').split(',').map(Number);
const ROUNDS = Number(process.env.PROBE_ROUNDS ?? 9);
const PARTS = (process.env.PROBE_PART ?? 'layer,graph').split(',');
const VARIANTS = (process.env.PROBE_VARIANTS ?? 'q4,q4-acc1,fp32,dqmm,mmi').split(',');
const PROJECTIONS: Array<[string, number]> = [['qkv_proj', 576], ['o_proj', 576], ['gate_up_proj', 576], ['down_proj', 1536]];

interface Case { part: string; variant: string; threads: number; session: ort.InferenceSession; feeds: Record<string, ort.Tensor>; rssMiB: number; wall: number[]; cpu: number[]; calls: number }

const rssMiB = () => process.memoryUsage().rss / 2 ** 20;

async function open(path: string, threads: number) {
  return ort.InferenceSession.create(path, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    extra: { session: { 'intra_op.allow_spinning': '0' } },
  });
}

async function main() {
  const cases: Case[] = [];
  for (const part of PARTS) {
    const units = part === 'layer' ? PROJECTIONS.map(([p, k]) => ({ name: `layer ${p}`, k, file: (v: string) => join(DIR, `layer-${p}-${v}.onnx`) })) : [{ name: 'graph', k: 0, file: (v: string) => (v === 'q4' ? SERVED : join(DIR, `${v}.onnx`)) }];
    for (const unit of units) for (const variant of VARIANTS) for (const threads of THREADS) {
      const path = unit.file(variant);
      if (!existsSync(path)) throw new Error(`missing ${path}: run scripts/prefill/build-variants.py`);
      global.gc?.();
      const before = rssMiB();
      const session = await open(path, threads);
      const feeds = part === 'layer' ? { x: new ort.Tensor('float32', Float32Array.from({ length: M * unit.k }, (_, i) => Math.sin(i * 0.37)), [M, unit.k]) } : stepFeeds(session.inputNames, 1, 0, M);
      await session.run(feeds); // warm
      cases.push({ part: unit.name, variant, threads, session, feeds, rssMiB: rssMiB() - before, wall: [], cpu: [], calls: part === 'layer' ? 10 : 1 });
    }
  }
  console.log(`M=${M}, rounds ${ROUNDS}, load before ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  for (let round = 0; round < ROUNDS; round++) {
    const order = cases.map((_, i) => cases[(i + round * 3) % cases.length]);
    for (const c of order) {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < c.calls; i++) await c.session.run(c.feeds);
      const wall = (performance.now() - t0) / c.calls;
      const cpu = process.cpuUsage(cpu0);
      c.wall.push(wall);
      c.cpu.push((cpu.user + cpu.system) / 1000 / c.calls);
    }
  }
  const base = (c: Case) => cases.find((b) => b.part === c.part && b.threads === c.threads && b.variant === 'q4')!;
  const rows = cases.map((c) => ({
    part: c.part,
    variant: c.variant,
    threads: c.threads,
    'wall ms': median(c.wall),
    'cpu ms': median(c.cpu),
    'wall ÷ q4': (median(c.wall) / median(base(c).wall)).toFixed(2),
    'cpu ÷ q4': (median(c.cpu) / median(base(c).cpu)).toFixed(2),
    'rss MiB': Math.round(c.rssMiB),
  }));
  console.log(formatTable(rows));
  console.log(`load after ${loadavg().map((l) => l.toFixed(1)).join(' ')} (loaded machine: ratios, not figures)`);
}

main().catch((e) => { console.error(e); process.exit(1); });
