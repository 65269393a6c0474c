/**
 * Engine-level A/B of thread settings (intraOpNumThreads, modelThread) on one model:
 * every configuration is loaded once in this process, then rounds run them in rotating
 * order (paired, so a loaded machine's swings hit all alike); medians are printed.
 *
 *   npx tsx scripts/threads/measure-threads.ts <model dir | 135m | 25m | 5m | embedded> [rounds] [tokens] [streams,...] [configs]
 *   configs: comma-separated threads[:main|worker], e.g. "1,2" or "2:main,2:worker"
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import { measuredModelDir } from './random-llama.js';

const [modelArg = 'embedded', roundsArg = '7', tokensArg = '32', streamsArg = '1,4', configsArg = '1,2'] = process.argv.slice(2);
const modelDir = await measuredModelDir(modelArg);
const rounds = Number(roundsArg);
const tokens = Number(tokensArg);
const streamCounts = streamsArg.split(',').map(Number);
const configs = configsArg.split(',').map((entry) => {
  const [threads, modelThread = 'main'] = entry.split(':');
  return { label: `${threads} thread${threads === '1' ? '' : 's'}, ${modelThread}`, threads: Number(threads), modelThread: modelThread as 'main' | 'worker' };
});

const engines: LocalEngine[] = [];
for (const config of configs) {
  engines.push(await createNodeEngine({ modelDir, intraOpNumThreads: config.threads, modelThread: config.modelThread }));
}
console.log(`model ${modelDir} (${(engines[0].loadReport.bytes / 1e6).toFixed(1)} MB), ${tokens} tokens per stream, ${rounds} rounds`);

/** Longest event-loop stall seen during each configuration's runs (what an HTTP request would wait). */
const stalls = configs.map(() => [] as number[]);

async function run(engine: LocalEngine, streams: number, index = -1): Promise<number> {
  const params = defaultSamplingParams({ maxTokens: tokens, ignoreEos: true, temperature: 0 });
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  try {
    return await timed(engine, streams, params);
  } finally {
    delay.disable();
    if (index >= 0) stalls[index].push(delay.max / 1e6);
  }
}

async function timed(engine: LocalEngine, streams: number, params: ReturnType<typeof defaultSamplingParams>): Promise<number> {
  const started = performance.now();
  let generated = 0;
  await Promise.all(
    Array.from({ length: streams }, async (_, index) => {
      for await (const delta of engine.generate({ promptTokenIds: [1, 403 + index, 407, 261, 378], params })) generated += delta.tokenIds.length;
    }),
  );
  return generated / ((performance.now() - started) / 1000);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

for (const engine of engines) await run(engine, 1); // warm-up
for (const streams of streamCounts) {
  const results = configs.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < configs.length; k++) {
      const index = (round + k) % configs.length;
      results[index].push(await run(engines[index], streams, index));
    }
  }
  const line = configs.map((config, index) => `${config.label}: ${median(results[index]).toFixed(1)} tok/s`).join(' | ');
  const ratio = configs.length > 1 ? ` (ratio ${(median(results[1]) / median(results[0])).toFixed(2)})` : '';
  console.log(`${streams} stream(s): ${line}${ratio}  [per round: ${results.map((r) => r.map((v) => v.toFixed(0)).join('/')).join(' ; ')}]`);
  console.log(`  longest event-loop stall, median over rounds: ${configs.map((config, index) => `${config.label} ${median(stalls[index]).toFixed(1)} ms`).join(' | ')}`);
  stalls.forEach((list) => (list.length = 0));
}
for (const engine of engines) await engine.dispose();
