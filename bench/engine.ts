import type { Engine } from '../src/engine/types.js';
import { defaultSamplingParams } from '../src/sampling/params.js';
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { median } from './stats.js';

export interface EngineBenchResult {
  backend: string;
  batch: number;
  tokensPerSecond: number;
  runs: number[];
}

const PROMPT = 'Once upon a time';

/** Aggregate decode throughput of `batch` concurrent greedy requests straight on the engine (no HTTP). */
export async function runOnce(engine: Engine, batch: number, maxTokens: number): Promise<number> {
  const promptTokenIds = engine.tokenizer.encode(PROMPT);
  const params = defaultSamplingParams({ temperature: 0, maxTokens, ignoreEos: true });
  const start = performance.now();
  const counts = await Promise.all(
    Array.from({ length: batch }, async () => {
      let tokens = 0;
      for await (const delta of engine.generate({ promptTokenIds, params })) tokens += delta.tokenIds.length;
      return tokens;
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  return counts.reduce((a, b) => a + b, 0) / seconds;
}

/**
 * V8 needs thousands of steps to optimise the sampler and, on WASM, ORT's own code; a
 * short warm-up understates the steady state by up to 2x.
 */
export async function warmUp(engine: Engine, backend: 'native' | 'wasm', maxTokens: number): Promise<void> {
  const warmUpSteps = backend === 'wasm' ? 2000 : 800;
  for (let steps = 0; steps < warmUpSteps; steps += maxTokens) await runOnce(engine, 8, maxTokens);
}

export async function benchEngine(options: {
  modelDir: string;
  backends: Array<'native' | 'wasm'>;
  batches: number[];
  maxTokens: number;
  runs: number;
}): Promise<EngineBenchResult[]> {
  const results: EngineBenchResult[] = [];
  for (const backend of options.backends) {
    const engine = await createNodeEngine({ modelDir: options.modelDir, backend });
    await warmUp(engine, backend, options.maxTokens);
    for (const batch of options.batches) {
      const runs: number[] = [];
      for (let i = 0; i < options.runs; i++) runs.push(await runOnce(engine, batch, options.maxTokens));
      results.push({ backend, batch, tokensPerSecond: median(runs), runs });
    }
    await engine.dispose();
  }
  return results;
}
