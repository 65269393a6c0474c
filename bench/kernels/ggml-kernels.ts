/**
 * llama.cpp's time for the same products: test-backend-ops (`perf -b CPU --test-file`), built
 * from node-llama-cpp's sources by scripts/peer/build-test-backend-ops.sh, on MUL_MAT of a
 * [K, N] weight in F32 / Q8_0 / Q4_0 with [K, M] float activations (ggml quantizes them to
 * the weight type's dot-product type inside the op, so that cost is in its time, as int8
 * activations are in MatMulNBits accuracy_level 4's).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** ggml enum values (ggml.h of the bundled sources: GGML_OP_MUL_MAT, GGML_TYPE_*). */
const GGML_OP_MUL_MAT = 29;
export const GGML_TYPES = { F32: { id: 0, block: 1, bytes: 4 }, Q8_0: { id: 8, block: 32, bytes: 34 }, Q4_0: { id: 2, block: 32, bytes: 18 } } as const;
export type GgmlType = keyof typeof GGML_TYPES;

export interface GgmlCase {
  k: number;
  n: number;
  m: number;
  type: GgmlType;
}

export const ggmlKey = (c: GgmlCase, threads: number) => `${c.type}|${c.k}x${c.n}|${c.m}|${threads}`;

/** One line of test-backend-ops' --test-file (test_generic_op): op, type, ne, params, sources, name. */
function testFileLine(c: GgmlCase): string {
  const { id, block, bytes } = GGML_TYPES[c.type];
  const rowBytes = (c.k / block) * bytes;
  const weight = [id, c.k, c.n, 1, 1, bytes, rowBytes, rowBytes * c.n, rowBytes * c.n];
  const activations = [0, c.k, c.m, 1, 1, 4, 4 * c.k, 4 * c.k * c.m, 4 * c.k * c.m];
  return [GGML_OP_MUL_MAT, 0, c.n, c.m, 1, 1, 0, 2, ...weight, ...activations, ggmlKey(c, 0)].join(' ');
}

/** Runs every case once at `threads`; µs per run by ggmlKey. */
export function timeGgmlCases(binary: string, cases: readonly GgmlCase[], threads: number, workDir: string): Map<string, number> {
  const file = join(workDir, 'ggml-cases.txt');
  writeFileSync(file, cases.map(testFileLine).join('\n') + '\n');
  const output = execFileSync(binary, ['perf', '-b', 'CPU', '--test-file', file], {
    env: { ...process.env, GGML_N_THREADS: String(threads) },
    encoding: 'utf8',
    maxBuffer: 16 << 20,
  });
  const times = new Map<string, number>();
  for (const line of output.split('\n')) {
    const match = /name=([A-Z0-9_]+\|\d+x\d+\|\d+)\|0.*?([\d.]+) us\/run/.exec(line);
    if (match) times.set(`${match[1]}|${threads}`, Number(match[2]));
  }
  for (const c of cases) if (!times.has(ggmlKey(c, threads))) throw new Error(`test-backend-ops gave no time for ${ggmlKey(c, threads)}:\n${output}`);
  return times;
}
