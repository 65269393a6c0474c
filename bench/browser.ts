/**
 * `npm run bench:browser`: the in-page engine's decode rate in headless Chromium, the page
 * served as `npm start` serves it. Each configuration is its own page (URL parameters
 * pick the WASM thread count); runs alternate between configurations so a slow phase of
 * the machine hits all of them, and medians are printed with their ratios.
 *
 * BENCH_RUNS (default 7), BENCH_TOKENS (default 128, WebGPU 32: SwiftShader is slow),
 * BENCH_CONFIGS (default "wasm?threads=1,wasm?threads=2,webgpu").
 *
 * Figures, not pass/fail. On SwiftShader (no GPU) WebGPU's absolute rate means nothing;
 * compare configurations with each other. The same benchmark runs in any browser from the
 * console: `await edgeLlm.benchmark('webgpu')`.
 */
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { chromium, type Page } from 'playwright-core';
import { buildPlayground } from '../scripts/build-playground.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../scripts/chromium.js';
import { DEFAULT_SERVER_CONFIG } from '../src/config/server-config.js';
import { createApp } from '../src/http/app.js';
import { createNodeEngine } from '../src/runtime/node-engine.js';
import { playgroundRoutes } from '../src/runtime/node-static.js';
import { formatTable, median } from './stats.js';

const modelDir = fileURLToPath(new URL('../models/stories260k/', import.meta.url));
const runs = Number(process.env.BENCH_RUNS ?? 7);
const configs = (process.env.BENCH_CONFIGS ?? 'wasm?threads=1,wasm?threads=2,webgpu').split(',');

interface Config {
  name: string;
  backend: 'wasm' | 'webgpu';
  page: Page;
  tokens: number;
  rates: number[];
  prefills: number[];
  runsOn: string;
}

async function main(): Promise<void> {
  const [, engine] = await Promise.all([buildPlayground(), createNodeEngine({ modelDir })]);
  const app = createApp({ engine, config: DEFAULT_SERVER_CONFIG });
  app.route('/', playgroundRoutes({ modelDir }));
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
  try {
    const loaded: Config[] = [];
    for (const name of configs) {
      const [backend, query = ''] = name.split('?') as ['wasm' | 'webgpu', string?];
      const page = await (await browser.newContext()).newPage();
      await page.goto(`${baseUrl}?${query}`);
      await page.locator(`#target-${backend}:not([disabled])`).waitFor({ state: 'attached', timeout: 30_000 });
      await page.locator(`label[for="target-${backend}"]`).click();
      await page.waitForFunction(() => document.getElementById('engine-status')?.dataset.kind === 'ready', undefined, { timeout: 120_000 });
      const runsOn = await page.evaluate(async (b) => (await (window as any).edgeLlm.app(b)).runsOn as string, backend);
      const tokens = Number(process.env.BENCH_TOKENS ?? (backend === 'webgpu' ? 32 : 128));
      // Warm-up: V8 and onnxruntime settle during the first few hundred steps.
      await benchmark(page, backend, tokens, 2);
      loaded.push({ name, backend, page, tokens, rates: [], prefills: [], runsOn });
    }
    for (let run = 0; run < runs; run++) {
      for (const config of loaded) {
        const result = await benchmark(config.page, config.backend, config.tokens, 1);
        config.rates.push(result.stepsPerSecond);
        config.prefills.push(result.prefillMs);
      }
    }
    const base = median(loaded[0]!.rates);
    console.log(`\n## In-page engine, decode steps/s (greedy, batch 1), median of ${runs} alternating runs; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
    console.log(
      formatTable(
        loaded.map((c) => ({
          config: c.name,
          'runs on': c.runsOn,
          tokens: c.tokens,
          'steps/s': median(c.rates),
          'min..max': `${Math.min(...c.rates).toFixed(1)}..${Math.max(...c.rates).toFixed(1)}`,
          'prefill ms': median(c.prefills),
          [`vs ${loaded[0]!.name}`]: `${(median(c.rates) / base).toFixed(2)}×`,
        })),
      ),
    );
  } finally {
    await browser.close();
    server.close();
    await engine.dispose();
  }
}

function benchmark(page: Page, backend: string, tokens: number, runs: number): Promise<{ stepsPerSecond: number; prefillMs: number }> {
  return page.evaluate(({ backend, tokens, runs }) => (window as any).edgeLlm.benchmark(backend, { tokens, runs }), { backend, tokens, runs });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
