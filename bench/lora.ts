/**
 * LoRA throughput: decode tok/s of the engine alone at 8 concurrent greedy streams, all on
 * the base model vs spread over 4 different adapters (2 streams each, one model call per
 * step for all of them), with the plain engine (no adapters configured) for reference.
 * Runs alternate between the cases so a slow phase of the machine hits all of them.
 * Standalone: `npx tsx bench/lora.ts` (BENCH_RUNS, BENCH_TOKENS); also a section of `npm run bench`.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readLlama2cCheckpoint } from '../src/convert/llama2c-checkpoint.js';
import { randomAdapter, writeAdapterDir } from '../scripts/adapters/random-peft-adapter.js';
import type { LocalEngine } from '../src/engine/local-engine.js';
import { readAdapterDir } from '../src/runtime/node/adapters.js';
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { defaultSamplingParams } from '../src/sampling/params.js';
import { formatTable, median } from './stats.js';

const CHECKPOINT = fileURLToPath(new URL('../test/fixtures/stories260K/stories260K.bin', import.meta.url));
const STREAMS = 8;

export interface LoraBenchResult {
  case: string;
  tokensPerSecond: number;
  runs: number[];
}

async function streams(engine: LocalEngine, adapters: Array<string | undefined>, maxTokens: number): Promise<number> {
  const promptTokenIds = engine.tokenizer.encode('Once upon a time');
  const params = defaultSamplingParams({ temperature: 0, maxTokens, ignoreEos: true });
  const start = performance.now();
  const counts = await Promise.all(
    adapters.map(async (adapter) => {
      let tokens = 0;
      for await (const delta of engine.generate({ promptTokenIds, params, ...(adapter ? { adapter } : {}) })) tokens += delta.tokenIds.length;
      return tokens;
    }),
  );
  return counts.reduce((a, b) => a + b, 0) / ((performance.now() - start) / 1000);
}

export async function benchLora(options: { modelDir: string; runs: number; maxTokens: number }): Promise<LoraBenchResult[]> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-lora-'));
  const plain = await createNodeEngine({ modelDir: options.modelDir });
  let lora: LocalEngine | undefined;
  try {
    const ckpt = readLlama2cCheckpoint(await readFile(CHECKPOINT));
    const modules = [];
    for (let i = 0; i < 4; i++) {
      const path = await writeAdapterDir(join(dir, `a${i}`), randomAdapter(ckpt, { seed: 100 + i, rank: 8, alpha: 16, magnitude: 0.08 }));
      modules.push({ name: `a${i}`, path });
    }
    lora = await createNodeEngine({
      modelDir: options.modelDir,
      lora: { maxLoras: 4, maxLoraRank: 16, modules, reader: readAdapterDir, runtimeUpdates: false },
    });
    const base = Array.from({ length: STREAMS }, () => undefined);
    const cases: Array<{ label: string; engine: LocalEngine; adapters: Array<string | undefined> }> = [
      { label: 'no adapters configured, 8 base streams', engine: plain, adapters: base },
      { label: 'adapters on, 8 base streams', engine: lora, adapters: base },
      { label: 'adapters on, 8 streams on 4 adapters', engine: lora, adapters: Array.from({ length: STREAMS }, (_, i) => `a${i % 4}`) },
      { label: 'adapters on, 4 base + 4 on 4 adapters', engine: lora, adapters: Array.from({ length: STREAMS }, (_, i) => (i % 2 ? `a${i >> 1}` : undefined)) },
    ];
    for (let i = 0; i < 6; i++) for (const c of cases) await streams(c.engine, c.adapters, options.maxTokens); // warm-up
    const runs = cases.map(() => [] as number[]);
    for (let r = 0; r < options.runs; r++) {
      for (const [index, c] of cases.entries()) runs[index].push(await streams(c.engine, c.adapters, options.maxTokens));
    }
    return cases.map((c, index) => ({ case: c.label, tokensPerSecond: median(runs[index]), runs: runs[index] }));
  } finally {
    await plain.dispose();
    await lora?.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

export function loraTable(results: readonly LoraBenchResult[]): string {
  return formatTable(
    results.map((r) => ({
      case: r.case,
      'tokens/s': Math.round(r.tokensPerSecond),
      'min..max': `${Math.round(Math.min(...r.runs))}..${Math.round(Math.max(...r.runs))}`,
    })),
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const runs = Number(process.env.BENCH_RUNS ?? 5);
  const maxTokens = Number(process.env.BENCH_TOKENS ?? 128);
  console.log(`## LoRA: engine alone, ${STREAMS} concurrent greedy streams, ${maxTokens} tokens each, median of ${runs} runs\n`);
  benchLora({ modelDir: fileURLToPath(new URL('../models/stories260k/', import.meta.url)), runs, maxTokens })
    .then((results) => console.log(loraTable(results)))
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}
