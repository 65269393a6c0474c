/**
 * `npm run bench`'s model-size section: runs bench/size.ts, prints the side-by-side table
 * (Markdown, ready for the README), writes bench/results/size-<date>.json and .md, and the
 * chart docs/bench-135m-throughput.svg (linked from the README).
 *
 * BENCH_QUICK=1: one round of 32 tokens (a few minutes); otherwise BENCH_ROUNDS (3) rounds
 * of BENCH_TOKENS (128) tokens. Skipped with a note when llama.cpp's server is not built
 * (scripts/peer/build-llama-server.sh).
 *
 * BENCH_GGUF=path/to/file.gguf: only that file, served by our server (MODEL_DIR=file.gguf)
 * and by llama-server, same rounds and figures; the chart is not rewritten.
 * BENCH_MODELS=135m-q4 (a comma list of stories260k, 135m-fp32, 135m-q4): only those rows; nor is it then.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { throughputChart } from './chart.js';
import { llamaServerBinary, llamaServerVersion } from './peer.js';
import { benchSizes, peerDetailTable, sizeMarkdownTable, type SizeResults } from './size.js';

export async function sizeSection(): Promise<SizeResults | null> {
  const quick = process.env.BENCH_QUICK === '1';
  const rounds = Number(process.env.BENCH_ROUNDS ?? (quick ? 1 : 3));
  const maxTokens = Number(process.env.BENCH_TOKENS ?? (quick ? 32 : 128));
  console.log(`\n## Model sizes, side by side with llama.cpp's server (same weights and vocabulary, ${rounds} interleaved rounds, medians, ${maxTokens} tokens)\n`);
  const version = llamaServerVersion();
  if (version === null) {
    console.log(`skipped: llama.cpp's server is not built at ${llamaServerBinary()} (run scripts/peer/build-llama-server.sh)`);
    return null;
  }
  const results = await benchSizes({ rounds, maxTokens, streams: [8, 32], ttftPromptTokens: 128, log: console.log }, version);
  const table = sizeMarkdownTable(results);
  const details = peerDetailTable(results);
  const load = `load average ${results.loadAverage.before.map((v) => v.toFixed(2)).join(' / ')} before, ${results.loadAverage.after.map((v) => v.toFixed(2)).join(' / ')} after (1 / 5 / 15 min)`;
  const greedy = results.rows
    .map((row) => `${row.model} ${row.dtype}: greedy ids agree for the first ${row.greedy.agreeingPrefix.join(', ')} of ${row.greedy.tokensPerPrompt} tokens (${row.greedy.prompts} prompts)`)
    .concat(results.storiesQ4Greedy ? [`stories260K q4 / Q4_0: greedy ids agree for the first ${results.storiesQ4Greedy.agreeingPrefix.join(', ')} of ${results.storiesQ4Greedy.tokensPerPrompt} tokens (${results.storiesQ4Greedy.prompts} prompts)`] : [])
    .join('\n');
  const markdown = `Peer: ${results.peer}.\nMachine: ${results.machine}, ${load}.\n\n${table}\n\nRatios are this project ÷ llama.cpp (for TTFT and RSS, below 1 is better).\n\n${greedy}\n\nEvery configuration:\n\n${details}\n`;
  console.log(`\n${markdown}`);
  const date = new Date().toISOString().slice(0, 19).replace(/:/g, '-');
  const outDir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(outDir, { recursive: true });
  writeFileSync(`${outDir}/size-${date}.json`, JSON.stringify(results, null, 2));
  writeFileSync(`${outDir}/size-${date}.md`, markdown);
  // The chart is of the 135M rows: redrawn only when the section ran them all.
  if (process.env.BENCH_GGUF || process.env.BENCH_MODELS) {
    console.log(`written: bench/results/size-${date}.json, bench/results/size-${date}.md`);
    return results;
  }
  const chart = fileURLToPath(new URL('../docs/bench-135m-throughput.svg', import.meta.url));
  writeFileSync(chart, throughputChart(results));
  console.log(`written: bench/results/size-${date}.json, bench/results/size-${date}.md, docs/bench-135m-throughput.svg`);
  return results;
}
