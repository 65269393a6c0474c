/**
 * `npx tsx bench/multi-sequence.ts`: throughput of n = 8 sequences in one request
 * against 8 separate requests (all at once, and one after another), and of beam search
 * with width 8, on the engine alone (no HTTP). Sampling at temperature 1, ignore_eos,
 * BENCH_TOKENS (default 128) tokens per sequence, median of BENCH_RUNS (default 5) runs.
 * Figures, never pass/fail.
 */
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import type { Engine } from '../src/engine/types.js';
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { defaultSamplingParams, type SamplingParams } from '../src/sampling/params.js';
import { formatTable, median } from './stats.js';

const modelDir = fileURLToPath(new URL('../models/stories260k/', import.meta.url));
const runs = Number(process.env.BENCH_RUNS ?? 5);
const maxTokens = Number(process.env.BENCH_TOKENS ?? 128);
const SEQUENCES = 8;

async function tokensOf(engine: Engine, promptTokenIds: number[], params: SamplingParams): Promise<number> {
  let tokens = 0;
  for await (const delta of engine.generate({ promptTokenIds, params })) tokens += delta.tokenIds.length;
  return tokens;
}

/** Generated tokens per second of `work` (beam search counts the returned beams' tokens only). */
async function tokensPerSecond(work: () => Promise<number>): Promise<number> {
  const start = performance.now();
  const tokens = await work();
  return tokens / ((performance.now() - start) / 1000);
}

async function main(): Promise<void> {
  const engine = await createNodeEngine({ modelDir });
  const prompt = engine.tokenizer.encode('Once upon a time', { addSpecialTokens: true });
  const sampling = (overrides: Partial<SamplingParams>) =>
    defaultSamplingParams({ temperature: 1, maxTokens, ignoreEos: true, ...overrides });
  await tokensOf(engine, prompt, sampling({ maxTokens: 16 })); // warm-up

  const cases: Array<{ name: string; work: () => Promise<number> }> = [
    { name: `one request, n = ${SEQUENCES}`, work: () => tokensOf(engine, prompt, sampling({ n: SEQUENCES })) },
    {
      name: `${SEQUENCES} requests at once`,
      work: async () => (await Promise.all(Array.from({ length: SEQUENCES }, () => tokensOf(engine, prompt, sampling({}))))).reduce((a, b) => a + b, 0),
    },
    {
      name: `${SEQUENCES} requests one after another`,
      work: async () => {
        let total = 0;
        for (let i = 0; i < SEQUENCES; i++) total += await tokensOf(engine, prompt, sampling({}));
        return total;
      },
    },
    { name: `one request, n = 1`, work: () => tokensOf(engine, prompt, sampling({})) },
    {
      name: `beam search, width ${SEQUENCES} (n = ${SEQUENCES})`,
      work: () => tokensOf(engine, prompt, sampling({ temperature: 0, n: SEQUENCES, bestOf: SEQUENCES, useBeamSearch: true })),
    },
  ];

  const rows: Array<Record<string, string | number>> = [];
  for (const { name, work } of cases) {
    const figures: number[] = [];
    const stepsBefore = engine.stats().steps;
    for (let i = 0; i < runs; i++) figures.push(await tokensPerSecond(work));
    const steps = (engine.stats().steps - stepsBefore) / runs;
    rows.push({
      case: name,
      'tokens/s': Math.round(median(figures)),
      'min..max': `${Math.round(Math.min(...figures))}..${Math.round(Math.max(...figures))}`,
      'model calls': Math.round(steps),
    });
  }
  await engine.dispose();
  console.log(`\n## Several sequences per request: ${maxTokens} tokens per sequence, median of ${runs} runs (load ${loadavg()[0].toFixed(2)})\n`);
  console.log(formatTable(rows));
}

await main();
