/**
 * The kernel study (issue #28): every quantized matrix product onnxruntime-node runs on CPU,
 * on the 135M model's weight shapes, beside llama.cpp's MUL_MAT of the same shape and type,
 * in interleaved rounds (ours for every shape, then llama.cpp's, per round).
 *
 *   npm run bench:kernels                 # all forms, 1 and 2 threads, 3 rounds
 *   KERNEL_ROUNDS=5 KERNEL_THREADS=1 npm run bench:kernels
 *   KERNEL_OUT=docs/kernel-study.table.md  # also write the tables there
 *
 * Prints markdown tables: rows weight shape x M, columns llama.cpp's F32 / Q8_0 / Q4_0 µs and
 * each onnxruntime form's µs with its speed ratio to the llama.cpp type of the same width
 * (fp32 -> F32, 8-bit and int8 -> Q8_0, 4-bit -> Q4_0; > 1 is faster than llama.cpp).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { GGML_TYPES, ggmlKey, timeGgmlCases, type GgmlCase, type GgmlType } from './ggml-kernels.js';
import { formLabel, kernelForms, type KernelForm } from './onnx-ops.js';
import { collectKernelTimes, kernelKey, openKernelSessions, runKernelRound, type KernelSessions } from './ort-kernels.js';
import { median } from '../stats.js';

/** [K, N] of SmolLM2-135M's products: q/o (and k/v at 192 rows: not timed), gate/up, down, the tied head. */
const SHAPES: Array<{ name: string; k: number; n: number }> = [
  { name: 'attn 576x576', k: 576, n: 576 },
  { name: 'up 576x1536', k: 576, n: 1536 },
  { name: 'down 1536x576', k: 1536, n: 576 },
  { name: 'head 576x49152', k: 576, n: 49152 },
];
const MS = (process.env.KERNEL_MS ?? '1,8,32').split(',').map(Number);
const THREADS = (process.env.KERNEL_THREADS ?? '1,2').split(',').map(Number);
const ROUNDS = Number(process.env.KERNEL_ROUNDS ?? 3);
const RUNS = Number(process.env.KERNEL_RUNS ?? 20);
const MS_PER_ROUND = Number(process.env.KERNEL_MS_PER_ROUND ?? 40);
const FORM_FILTER = process.env.KERNEL_FORMS ? new RegExp(process.env.KERNEL_FORMS) : undefined;
const SKIP_GGML = process.env.KERNEL_SKIP_GGML === '1';
/** llama.cpp's thread counts (default: KERNEL_THREADS); its spin barrier makes 2 threads slow on a busy machine. */
const GGML_THREADS = (process.env.KERNEL_GGML_THREADS ?? THREADS.join(',')).split(',').map(Number);

function referenceType(form: KernelForm): GgmlType {
  if (form.kind === 'fp32') return 'F32';
  return form.kind === 'nbits' && form.bits === 4 ? 'Q4_0' : 'Q8_0';
}

function ggmlBinary(): string {
  return execFileSync('bash', [new URL('../../scripts/peer/build-test-backend-ops.sh', import.meta.url).pathname], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

async function main() {
  const forms = kernelForms().filter((f) => !FORM_FILTER || FORM_FILTER.test(formLabel(f)));
  const workDir = join(tmpdir(), `edge-llm-kernels-${process.pid}`);
  const binary = SKIP_GGML ? '' : ggmlBinary();
  const cases: GgmlCase[] = SHAPES.flatMap(({ k, n }) =>
    MS.flatMap((m) => (Object.keys(GGML_TYPES) as GgmlType[]).map((type) => ({ k, n, m, type }))),
  );
  const sets: KernelSessions[] = [];
  for (const { k, n } of SHAPES) {
    sets.push(await openKernelSessions({ k, n, ms: MS, threads: THREADS, forms, runsPerRound: RUNS, msPerRound: MS_PER_ROUND, workDir }));
  }
  const ggmlRuns = new Map<string, number[]>();
  const loads: number[] = [loadavg()[0]];
  for (let round = 0; round < ROUNDS; round++) {
    for (const set of sets) await runKernelRound(set);
    if (!SKIP_GGML) {
      for (const t of round % 2 ? [...GGML_THREADS].reverse() : GGML_THREADS) {
        for (const [key, us] of timeGgmlCases(binary, cases, t, workDir)) (ggmlRuns.get(key) ?? ggmlRuns.set(key, []).get(key)!).push(us);
      }
    }
    loads.push(loadavg()[0]);
    console.error(`round ${round + 1}/${ROUNDS} done, load ${loads.at(-1)!.toFixed(2)}`);
  }
  const ours = new Map<string, number>();
  const refused = new Map<string, string>();
  for (const set of sets) {
    const times = await collectKernelTimes(set);
    for (const [key, us] of times.micros) ours.set(`${set.options.k}x${set.options.n}|${key}`, us);
    for (const [key, why] of times.refused) refused.set(key, why);
  }
  const ggml = (c: GgmlCase, t: number) => {
    const runs = ggmlRuns.get(ggmlKey(c, t));
    return runs ? median(runs) : NaN;
  };

  const lines: string[] = [];
  lines.push(`Load average (1 min) over the run: ${loads.map((l) => l.toFixed(2)).join(' → ')}; ${ROUNDS} rounds × 3–${RUNS} runs (≤ ${MS_PER_ROUND} ms) per (form, threads, M) and round; µs medians of every timed run.`);
  for (const t of THREADS) {
    lines.push('', `### ${t} thread${t > 1 ? 's' : ''}`, '');
    const header = ['shape', 'M', 'ggml F32', 'ggml Q8_0', 'ggml Q4_0', ...forms.map(formLabel)];
    lines.push(`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`);
    for (const shape of SHAPES) {
      for (const m of MS) {
        const refs = (['F32', 'Q8_0', 'Q4_0'] as GgmlType[]).map((type) => ggml({ k: shape.k, n: shape.n, m, type }, t));
        const cells = forms.map((form) => {
          const us = ours.get(`${shape.k}x${shape.n}|${kernelKey(formLabel(form), t, m)}`);
          if (us === undefined) return refused.has(kernelKey(formLabel(form), t, 0)) ? 'refused' : '–';
          const ref = ggml({ k: shape.k, n: shape.n, m, type: referenceType(form) }, t);
          return Number.isNaN(ref) ? `${us.toFixed(0)}` : `${us.toFixed(0)} (${(ref / us).toFixed(2)})`;
        });
        lines.push(`| ${shape.name} | ${m} | ${refs.map((r) => (Number.isNaN(r) ? '–' : r.toFixed(0))).join(' | ')} | ${cells.join(' | ')} |`);
      }
    }
  }
  for (const [key, why] of refused) lines.push('', `refused: ${key.split('|').slice(0, 2).join(' t')}: ${why}`);
  const text = lines.join('\n');
  console.log(text);
  if (process.env.KERNEL_OUT) writeFileSync(process.env.KERNEL_OUT, text + '\n');
}

await main();
