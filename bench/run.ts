/**
 * `npm run bench`: prints throughput figures (medians of several runs) and writes them
 * as JSON to bench/results/latest.json. Figures, never pass/fail: the machines are noisy.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { benchEngine } from './engine.js';
import { formatTable } from './stats.js';

const modelDir = fileURLToPath(new URL('../models/stories260k/', import.meta.url));
const runs = Number(process.env.BENCH_RUNS ?? 5);
const maxTokens = Number(process.env.BENCH_TOKENS ?? 128);

async function main() {
  const loadBefore = loadavg()[0];
  console.log(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), load average ${loadBefore.toFixed(2)}`);
  console.log(`engine only (no HTTP): greedy, ignore_eos, ${maxTokens} tokens per request, median of ${runs} runs\n`);
  const engine = await benchEngine({ modelDir, backends: ['native', 'wasm'], batches: [1, 8, 32], maxTokens, runs });
  console.log(
    formatTable(
      engine.map((r) => ({
        backend: r.backend === 'native' ? 'onnxruntime-node' : 'onnxruntime-web (wasm)',
        'concurrent requests': r.batch,
        'tokens/s (median)': Math.round(r.tokensPerSecond),
        'min..max': `${Math.round(Math.min(...r.runs))}..${Math.round(Math.max(...r.runs))}`,
      })),
    ),
  );
  const byBackend = (backend: string, batch: number) => engine.find((r) => r.backend === backend && r.batch === batch)?.tokensPerSecond ?? NaN;
  console.log(`\nratios: wasm/native at batch 1 = ${(byBackend('wasm', 1) / byBackend('native', 1)).toFixed(2)}, native batch 8 / batch 1 = ${(byBackend('native', 8) / byBackend('native', 1)).toFixed(2)}`);
  const results = { date: new Date().toISOString(), loadAverage: { before: loadBefore, after: loadavg()[0] }, maxTokens, runs, engine };
  const outDir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(outDir, { recursive: true });
  writeFileSync(`${outDir}/latest.json`, JSON.stringify(results, null, 2));
  console.log(`\nwritten: bench/results/latest.json`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
