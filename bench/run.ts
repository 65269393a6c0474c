/**
 * `npm run bench`: throughput and latency figures (medians of several runs), printed as
 * tables and written as JSON to bench/results/latest.json. Figures, never pass/fail: the
 * machines are noisy, so the load average is printed with them.
 *
 * BENCH_RUNS (default 5), BENCH_TOKENS (128), BENCH_ONLY=engine|http|lora|size|step-growth|gateway|homes|conversation|embeddings to run one part;
 * the size part (135M-shaped model and stories260K vs llama.cpp) is bench/size-section.ts; `homes`
 * (every home against its peers in one run, one Markdown table: bench/results/latest.md) is bench/homes.ts;
 * `embeddings` (embeddings/s for 1, 8, 64 inputs: ours vs transformers.js on the same ONNX in Node and in the page, vs
 * llama-server --embedding on the same GGUF) is bench/embeddings.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { benchEngine, runOnce, warmUp, type EngineBenchResult } from './engine.js';
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { concurrent, nonStreaming, startServer, streaming, type ConcurrencyResult } from './http.js';
import { formatTable, median } from './stats.js';
import { benchLora, loraTable, type LoraBenchResult } from './lora.js';
import { sizeSection } from './size-section.js';
import { benchStepGrowth, stepGrowthTable, type StepGrowthResult } from './step-growth.js';
import { benchGateway, gatewayTable, type GatewayBenchRow } from './gateway.js';
import { conversationSection } from './conversation.js';

const modelDir = fileURLToPath(new URL('../models/stories260k/', import.meta.url));
const runs = Number(process.env.BENCH_RUNS ?? 5);
const maxTokens = Number(process.env.BENCH_TOKENS ?? 128);
const only = process.env.BENCH_ONLY;

async function engineSection(): Promise<EngineBenchResult[]> {
  console.log(`\n## Engine alone (no HTTP): greedy, ignore_eos, ${maxTokens} tokens per request, median of ${runs} runs\n`);
  const results = await benchEngine({ modelDir, backends: ['native', 'wasm'], batches: [1, 8, 32], maxTokens, runs });
  console.log(
    formatTable(
      results.map((r) => ({
        backend: r.backend === 'native' ? 'onnxruntime-node' : 'onnxruntime-web (wasm)',
        'concurrent requests': r.batch,
        'tokens/s': Math.round(r.tokensPerSecond),
        'min..max': `${Math.round(Math.min(...r.runs))}..${Math.round(Math.max(...r.runs))}`,
      })),
    ),
  );
  return results;
}

interface HttpResults {
  nonStreamingTokensPerSecond: number;
  streamingDecodeTokensPerSecond: number;
  ttftMs: number;
  concurrency: ConcurrencyResult[];
  peakRssMiB: number;
  /** The same streams against dataParallelSize 2 (two engine processes on one port). */
  dataParallel2: ConcurrencyResult[];
  /**
   * One request over HTTP ÷ the engine alone at batch 1, from runs taken in alternation
   * (median of the per-pair ratios), so a slow phase of the machine hits both sides.
   */
  pairedHttpOverEngine: number;
}

async function concurrencyLevels(url: string, model: string, levels: number[]): Promise<ConcurrencyResult[]> {
  const results: ConcurrencyResult[] = [];
  for (const level of levels) {
    const levelRuns: ConcurrencyResult[] = [];
    for (let i = 0; i < runs; i++) levelRuns.push(await concurrent(url, model, level, maxTokens));
    results.push({
      concurrency: level,
      aggregateTokensPerSecond: median(levelRuns.map((r) => r.aggregateTokensPerSecond)),
      ttftP50: median(levelRuns.map((r) => r.ttftP50)),
      itlP50: median(levelRuns.map((r) => r.itlP50)),
      itlP95: median(levelRuns.map((r) => r.itlP95)),
    });
  }
  return results;
}

function concurrencyTable(results: ConcurrencyResult[]): string {
  return formatTable(
    results.map((c) => ({
      'concurrent streams': c.concurrency,
      'aggregate tok/s': Math.round(c.aggregateTokensPerSecond),
      'TTFT p50 ms': c.ttftP50,
      'inter-token p50 ms': c.itlP50,
      'inter-token p95 ms': c.itlP95,
    })),
  );
}

/** Two engine processes behind one port: what the machine's second core adds at many streams. */
async function dataParallelSection(): Promise<ConcurrencyResult[]> {
  console.log(`\n## Over HTTP with dataParallelSize 2 (two engine processes, one port)\n`);
  const server = await startServer({ MODEL_DIR: modelDir, SERVED_MODEL_NAME: 'bench', DATA_PARALLEL_SIZE: '2' });
  try {
    for (let i = 0; i < 6; i++) await concurrent(server.url, 'bench', 16, maxTokens);
    const results = await concurrencyLevels(server.url, 'bench', [1, 8, 32, 64]);
    console.log(concurrencyTable(results));
    return results;
  } finally {
    await server.stop();
  }
}

async function httpSection(): Promise<HttpResults> {
  console.log(`\n## Over HTTP: the real server on loopback, /v1/completions, greedy, ignore_eos, ${maxTokens} tokens, median of ${runs} runs\n`);
  const server = await startServer({ MODEL_DIR: modelDir, SERVED_MODEL_NAME: 'bench' });
  try {
    const model = 'bench';
    // Warm-up (JIT of the server's hot paths), as for the engine section.
    for (let i = 0; i < 6; i++) await concurrent(server.url, model, 8, maxTokens);
    const single: number[] = [];
    const decode: number[] = [];
    const ttft: number[] = [];
    const pairRatios: number[] = [];
    const engine = await createNodeEngine({ modelDir });
    await warmUp(engine, 'native', maxTokens);
    for (let i = 0; i < runs; i++) {
      const alone = await runOnce(engine, 1, maxTokens);
      single.push(await nonStreaming(server.url, model, maxTokens));
      pairRatios.push(single[single.length - 1] / alone);
      const timing = await streaming(server.url, model, maxTokens);
      ttft.push(timing.ttft);
      decode.push((timing.tokens - 1) / ((timing.total - timing.ttft) / 1000));
    }
    const concurrency = await concurrencyLevels(server.url, model, [1, 8, 32, 64]);
    const results: HttpResults = {
      nonStreamingTokensPerSecond: median(single),
      streamingDecodeTokensPerSecond: median(decode),
      ttftMs: median(ttft),
      concurrency,
      peakRssMiB: server.peakRssMiB(),
      dataParallel2: [],
      pairedHttpOverEngine: median(pairRatios),
    };
    await engine.dispose();
    console.log(
      formatTable([
        { figure: 'single request, non-streaming', value: `${Math.round(results.nonStreamingTokensPerSecond)} tok/s` },
        { figure: 'single request, streaming decode', value: `${Math.round(results.streamingDecodeTokensPerSecond)} tok/s` },
        { figure: 'time to first token', value: `${results.ttftMs.toFixed(2)} ms` },
        { figure: 'server peak RSS', value: `${results.peakRssMiB.toFixed(0)} MiB` },
        {
          figure: 'one request over HTTP / engine alone (paired runs)',
          value: `${results.pairedHttpOverEngine.toFixed(2)} (overhead ${((1 - results.pairedHttpOverEngine) * 100).toFixed(0)}%)`,
        },
      ]),
    );
    console.log('');
    console.log(concurrencyTable(concurrency));
    return results;
  } finally {
    await server.stop();
  }
}

async function main() {
  if (only === 'size') {
    await sizeSection();
    return;
  }
  if (only === 'conversation') {
    await conversationSection();
    return;
  }
  if (only === 'embeddings') {
    // Imported here: it loads transformers.js, which no other part needs.
    const { embeddingsSection } = await import('./embeddings.js');
    await embeddingsSection();
    return;
  }
  if (only === 'homes') {
    // Imported here: it loads transformers.js and Playwright, which no other part needs.
    const { benchHomes } = await import('./homes.js');
    await benchHomes();
    return;
  }
  const loadBefore = loadavg()[0];
  console.log(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), load average ${loadBefore.toFixed(2)} before the run`);
  const partOnly = only === 'lora' || only === 'step-growth' || only === 'gateway';
  const engine = only === 'http' || partOnly ? [] : await engineSection();
  const http = only === 'engine' || partOnly ? null : await httpSection();
  if (http) http.dataParallel2 = await dataParallelSection();
  const engineAt = (backend: string, batch: number) => engine.find((r) => r.backend === backend && r.batch === batch)?.tokensPerSecond;
  console.log('\n## Ratios\n');
  const native1 = engineAt('native', 1);
  const wasm1 = engineAt('wasm', 1);
  const native8 = engineAt('native', 8);
  if (native1 && wasm1) console.log(`wasm / native, engine at batch 1: ${(wasm1 / native1).toFixed(2)}`);
  if (native1 && native8) console.log(`native batch 8 / batch 1 (engine): ${(native8 / native1).toFixed(2)}`);
  if (http) {
    console.log(`HTTP non-streaming / engine at batch 1, paired runs: ${http.pairedHttpOverEngine.toFixed(2)} (HTTP + scheduler overhead ${((1 - http.pairedHttpOverEngine) * 100).toFixed(0)}%)`);
  }
  if (http) {
    const single = http.concurrency.find((c) => c.concurrency === 1)?.aggregateTokensPerSecond;
    const at32 = http.concurrency.find((c) => c.concurrency === 32)?.aggregateTokensPerSecond;
    if (single && at32) console.log(`aggregate at 32 streams / 1 stream: ${(at32 / single).toFixed(2)}`);
    const at64 = http.concurrency.find((c) => c.concurrency === 64)?.aggregateTokensPerSecond;
    const parallel64 = http.dataParallel2.find((c) => c.concurrency === 64)?.aggregateTokensPerSecond;
    if (at64 && parallel64) console.log(`aggregate at 64 streams, two engine processes / one: ${(parallel64 / at64).toFixed(2)}`);
  }
  let lora: LoraBenchResult[] | null = null;
  if (only === undefined || only === 'lora') {
    console.log(`\n## LoRA: engine alone, 8 concurrent greedy streams, ${maxTokens} tokens each, median of ${runs} runs (alternated)\n`);
    lora = await benchLora({ modelDir, runs, maxTokens });
    console.log(loraTable(lora));
  }
  if (only === undefined) await sizeSection();
  if (only === undefined) await conversationSection();
  let stepGrowth: StepGrowthResult[] | null = null;
  if (only === undefined || only === 'step-growth') {
    const stepRuns = Number(process.env.STEP_GROWTH_ROUNDS ?? 3);
    console.log(`\n## Step time vs context: 32 greedy streams to the end of a 512-token context, median ms per step, median of ${stepRuns} rounds (alternated)\n`);
    stepGrowth = await benchStepGrowth({ rounds: stepRuns, rows: 32 });
    console.log(stepGrowthTable(stepGrowth));
  }
  let gateway: GatewayBenchRow[] | null = null;
  if (only === undefined || only === 'gateway') {
    console.log(`\n## Gateway overhead: the gateway under plain workerd in front of the Node server vs the Node server directly, ${maxTokens} tokens per stream, median of ${runs} alternated runs (ratio: median of per-pair gateway / direct)\n`);
    gateway = await benchGateway({ runs, maxTokens });
    console.log(gatewayTable(gateway));
  }
  if (only === undefined) await (await import('./embeddings.js')).embeddingsSection();
  const loadAfter = loadavg()[0];
  console.log(`\nload average after the run: ${loadAfter.toFixed(2)}`);
  const outDir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(outDir, { recursive: true });
  writeFileSync(`${outDir}/latest.json`, JSON.stringify({ date: new Date().toISOString(), loadAverage: { before: loadBefore, after: loadAfter }, maxTokens, runs, engine, http, lora, stepGrowth, gateway }, null, 2));
  console.log('written: bench/results/latest.json');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
