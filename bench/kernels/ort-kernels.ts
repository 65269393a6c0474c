/**
 * Times the kernel of each one-op model (onnx-ops.ts) in onnxruntime-node: per run, the sum of
 * the graph's node times from onnxruntime's own profiler, so the ~0.1 ms of JS binding and
 * session fixed cost per run is left out, as llama.cpp's test-backend-ops leaves its graph
 * set-up out. Sessions for every form and thread count are run in interleaved rounds (order
 * rotated each round); the result is the median over all runs of a (form, threads, M).
 *
 * The weights stay cache-hot across runs (one op, the same weights every run), as in
 * test-backend-ops, which repeats one node over the same tensors.
 */
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { median } from '../stats.js';
import { buildKernelModel, formLabel, type KernelForm } from './onnx-ops.js';

export interface OrtKernelOptions {
  k: number;
  n: number;
  ms: readonly number[];
  threads: readonly number[];
  forms: readonly KernelForm[];
  /** Most runs per (session, M) in a round; fewer once `msPerRound` is spent (at least 3). */
  runsPerRound: number;
  msPerRound: number;
  workDir: string;
  /** Extra session config entries (e.g. spinning), applied to every session. */
  sessionConfig?: Record<string, string>;
}

/** µs median per `${label}|${threads}|${m}`; a form onnxruntime refuses maps to its error. */
export interface OrtKernelTimes {
  micros: Map<string, number>;
  refused: Map<string, string>;
}

export const kernelKey = (label: string, threads: number, m: number) => `${label}|${threads}|${m}`;

interface ProfileEvent {
  cat: string;
  name: string;
  ts: number;
  dur: number;
  args?: { op_name?: string; input_type_shape?: Array<Record<string, number[]>> };
}

/** Per run (a "model_run" event), the node times inside it summed, keyed by the first input's row count. */
function kernelTimesByRows(events: ProfileEvent[]): Map<number, number[]> {
  const runs = events.filter((e) => e.cat === 'Session' && e.name === 'model_run');
  const nodes = events.filter((e) => e.cat === 'Node' && e.name.endsWith('_kernel_time'));
  const byRows = new Map<number, number[]>();
  let at = 0;
  nodes.sort((x, y) => x.ts - y.ts);
  for (const run of runs.sort((x, y) => x.ts - y.ts)) {
    let sum = 0;
    let rows: number | undefined;
    while (at < nodes.length && nodes[at].ts < run.ts) at++;
    while (at < nodes.length && nodes[at].ts <= run.ts + run.dur) {
      const node = nodes[at++];
      sum += node.dur;
      const firstShape = node.args?.input_type_shape?.[0];
      if (rows === undefined && firstShape) rows = Object.values(firstShape)[0][0];
    }
    if (rows === undefined) continue;
    (byRows.get(rows) ?? byRows.set(rows, []).get(rows)!).push(sum);
  }
  return byRows;
}

function seededInput(m: number, k: number): ort.Tensor {
  return new ort.Tensor('float32', Float32Array.from({ length: m * k }, (_, i) => Math.sin(i * 0.37)), [m, k]);
}

export interface KernelSessions {
  options: OrtKernelOptions;
  sessions: Array<{ label: string; threads: number; session: ort.InferenceSession; profileDir: string }>;
  inputs: Map<number, Record<string, ort.Tensor>>;
  refused: Map<string, string>;
  roundsRun: number;
  /** Timed runs so far per `${session index}|${M}` (the profile's last ones). */
  timedRuns: Map<string, number>;
}

/** Writes each form's model, opens a profiling session per thread count, warms each up at every M. */
export async function openKernelSessions(options: OrtKernelOptions): Promise<KernelSessions> {
  const { k, n, ms, threads, forms, workDir } = options;
  mkdirSync(workDir, { recursive: true });
  const refused = new Map<string, string>();
  const sessions: KernelSessions['sessions'] = [];
  for (const form of forms) {
    const label = formLabel(form);
    const path = join(workDir, `${label.replaceAll(/[^a-z0-9]+/gi, '_')}_${k}x${n}.onnx`);
    writeFileSync(path, buildKernelModel(form, k, n));
    for (const t of threads) {
      // onnxruntime names the profile file itself (prefix + time): one folder per session finds it.
      const profileDir = join(workDir, `profile-${k}x${n}-${sessions.length}-${refused.size}`);
      mkdirSync(profileDir, { recursive: true });
      try {
        const session = await ort.InferenceSession.create(path, {
          intraOpNumThreads: t,
          interOpNumThreads: 1,
          graphOptimizationLevel: 'all',
          executionMode: 'sequential',
          enableProfiling: true,
          profileFilePrefix: join(profileDir, 'profile'),
          ...(options.sessionConfig ? { extra: { session: configTree(options.sessionConfig) } } : {}),
        });
        const probe = await session.run({ a: seededInput(1, k) });
        if (probe.y.dims[1] !== n) throw new Error(`output [${probe.y.dims.join(', ')}]`);
        sessions.push({ label, threads: t, session, profileDir });
      } catch (error) {
        refused.set(kernelKey(label, t, 0), (error as Error).message.split('\n')[0]);
      }
    }
    rmSync(path, { force: true });
  }
  const inputs = new Map(ms.map((m) => [m, { a: seededInput(m, k) }]));
  for (const s of sessions) for (const feeds of inputs.values()) await s.session.run(feeds);
  return { options, sessions, inputs, refused, roundsRun: 0, timedRuns: new Map() };
}

/** One round: every session, order rotated by the round, `runsPerRound` runs at each M. */
export async function runKernelRound(set: KernelSessions): Promise<void> {
  const { sessions, inputs } = set;
  const round = set.roundsRun++;
  for (let i = 0; i < sessions.length; i++) {
    const index = (i + round) % sessions.length;
    for (const [m, feeds] of inputs) {
      const started = performance.now();
      let runs = 0;
      while (runs < set.options.runsPerRound && (runs < 3 || performance.now() - started < set.options.msPerRound)) {
        await sessions[index].session.run(feeds);
        runs++;
      }
      const key = `${index}|${m}`;
      set.timedRuns.set(key, (set.timedRuns.get(key) ?? 0) + runs);
    }
  }
}

/** Ends profiling, reads each session's node times, releases the sessions. */
export async function collectKernelTimes(set: KernelSessions): Promise<OrtKernelTimes> {
  const { ms } = set.options;
  const micros = new Map<string, number>();
  for (const [index, s] of set.sessions.entries()) {
    s.session.endProfiling();
    const file = join(s.profileDir, readdirSync(s.profileDir)[0]);
    const byRows = kernelTimesByRows(JSON.parse(readFileSync(file, 'utf8')) as ProfileEvent[]);
    for (const m of ms) {
      // The warm-up runs come first; keep the timed rounds' runs only.
      const all = byRows.get(m) ?? [];
      const timed = all.slice(Math.max(0, all.length - (set.timedRuns.get(`${index}|${m}`) ?? 0)));
      if (timed.length > 0) micros.set(kernelKey(s.label, s.threads, m), median(timed));
    }
    rmSync(s.profileDir, { recursive: true, force: true });
    await s.session.release();
  }
  return { micros, refused: set.refused };
}

/** 'session.intra_op.allow_spinning' = '0' -> { intra_op: { allow_spinning: '0' } } (onnxruntime-node's `extra`). */
export function configTree(entries: Record<string, string>): Record<string, unknown> {
  const tree: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(entries)) {
    const parts = key.replace(/^session\./, '').split('.');
    let at = tree;
    for (const part of parts.slice(0, -1)) at = (at[part] ??= {}) as Record<string, unknown>;
    at[parts.at(-1)!] = value;
  }
  return tree;
}
