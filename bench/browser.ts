/**
 * `npm run bench:browser`: the in-page engine's decode rate in headless Chromium, the page
 * served as `npm start` serves it, beside the peers a browser user would pick on the same
 * weights in the same Chromium: wllama (llama.cpp in WASM, on the stories260K GGUF the
 * llama.cpp peer runs) and transformers.js (onnxruntime-web, on the embedded ONNX folder).
 * Each configuration is its own page (URL parameters pick the WASM thread count; every
 * page is cross-origin isolated, so every side may start threads); runs alternate between
 * configurations so a slow phase of the machine hits all of them, and medians are printed
 * with their ratios.
 *
 * BENCH_RUNS (default 7), BENCH_TOKENS (default 128, WebGPU 32: SwiftShader is slow),
 * BENCH_CONFIGS (default: ours at 1 and 2 threads, each peer at 1 and 2 threads, WebGPU):
 * `wasm?threads=N`, `webgpu`, `wllama?threads=N`, `transformers?threads=N`.
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
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { playgroundRoutes } from '../src/runtime/node/static.js';
import { peerRoutes } from './browser-peers/serve.js';
import { formatTable, median } from './stats.js';
import { warmUp } from './warm-up.js';

const modelDir = fileURLToPath(new URL('../models/stories260k/', import.meta.url));

export const DEFAULT_BROWSER_CONFIGS = [
  'wasm?threads=1',
  'wasm?threads=2',
  'wllama?threads=1',
  'wllama?threads=2',
  'transformers?threads=1',
  'transformers?threads=2',
  'webgpu',
];

type Side = 'wasm' | 'webgpu' | 'wllama' | 'transformers';

export interface BrowserConfigResult {
  name: string;
  side: Side;
  threads: number | null;
  runsOn: string;
  tokens: number;
  /** Per run, in the order taken (runs of all configurations alternate). */
  rates: number[];
  prefills: number[];
  /** Per run: tokens ÷ (time to first token + decode time). */
  oneRequest: number[];
}

export interface BrowserResults {
  runs: number;
  loadAverage: { before: number[]; after: number[] };
  configs: BrowserConfigResult[];
}

interface LoadedConfig extends BrowserConfigResult {
  page: Page;
}

export interface BrowserBenchOptions {
  runs: number;
  configs: string[];
  /** Tokens per request; default BENCH_TOKENS, else 128 (WebGPU 32). */
  tokens?: number;
  log?: (line: string) => void;
}

export async function benchBrowser(options: BrowserBenchOptions): Promise<BrowserResults> {
  const before = loadavg();
  const [, engine, peers] = await Promise.all([buildPlayground(), createNodeEngine({ modelDir }), peerRoutes()]);
  const app = createApp({ engine, config: DEFAULT_SERVER_CONFIG });
  app.route('/peers', peers);
  app.route('/', playgroundRoutes({ modelDir }));
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
  try {
    const loaded: LoadedConfig[] = [];
    for (const name of options.configs) {
      const [side, query = ''] = name.split('?') as [Side, string?];
      const threads = /threads=(\d+)/.exec(query)?.[1];
      const page = await (await browser.newContext()).newPage();
      const runsOn = side === 'wllama' || side === 'transformers' ? await openPeer(page, `${baseUrl}peers/${side}/?${query}`) : await openOurs(page, `${baseUrl}?${query}`, side);
      const tokens = options.tokens ?? Number(process.env.BENCH_TOKENS ?? (side === 'webgpu' ? 32 : 128));
      // Warm-up: V8 and the WASM engines settle over the first thousand or so steps (bench/warm-up.ts).
      await warmUp((warmTokens) => runOnce(page, side, side === 'webgpu' ? tokens : warmTokens));
      loaded.push({ name, side, threads: threads === undefined ? null : Number(threads), page, tokens, rates: [], prefills: [], oneRequest: [], runsOn });
      options.log?.(`  loaded ${name}: ${runsOn}`);
    }
    for (let run = 0; run < options.runs; run++) {
      // Rotate the order per run, so no configuration always runs after the same one.
      for (let k = 0; k < loaded.length; k++) {
        const config = loaded[(k + run) % loaded.length]!;
        const result = await runOnce(config.page, config.side, config.tokens);
        config.rates.push(result.stepsPerSecond);
        config.prefills.push(result.prefillMs);
        config.oneRequest.push((result.tokens * 1000) / (result.prefillMs + ((result.tokens - 1) * 1000) / result.stepsPerSecond));
      }
      options.log?.(`  run ${run + 1}/${options.runs} done (load ${loadavg()[0].toFixed(2)})`);
    }
    return { runs: options.runs, loadAverage: { before, after: loadavg() }, configs: loaded.map(({ page: _page, ...rest }) => rest) };
  } finally {
    await browser.close();
    server.close();
    await engine.dispose();
  }
}

async function openOurs(page: Page, url: string, backend: Side): Promise<string> {
  await page.goto(url);
  await page.locator(`#target-${backend}:not([disabled])`).waitFor({ state: 'attached', timeout: 30_000 });
  await page.locator(`label[for="target-${backend}"]`).click();
  await page.waitForFunction(() => document.getElementById('engine-status')?.dataset.kind === 'ready', undefined, { timeout: 120_000 });
  return page.evaluate(async (b) => (await (window as any).edgeLlm.app(b)).runsOn as string, backend);
}

async function openPeer(page: Page, url: string): Promise<string> {
  await page.goto(url);
  await page.waitForFunction(() => (window as any).peerPage !== undefined, undefined, { timeout: 30_000 });
  return page.evaluate(async () => (await (window as any).peerPage).runsOn as string);
}

interface Run {
  stepsPerSecond: number;
  prefillMs: number;
  tokens: number;
}

async function runOnce(page: Page, side: Side, tokens: number): Promise<Run> {
  if (side === 'wllama' || side === 'transformers') {
    return page.evaluate(async (tokens) => (await (window as any).peerPage).run(tokens), tokens);
  }
  const result: Run = await page.evaluate(({ side, tokens }) => (window as any).edgeLlm.benchmark(side, { tokens, runs: 1 }), { side, tokens });
  return { stepsPerSecond: result.stepsPerSecond, prefillMs: result.prefillMs, tokens };
}

export interface BrowserPeerRatio {
  threads: number;
  peer: 'wllama' | 'transformers.js';
  ours: { oneRequest: number; prefillMs: number };
  theirs: { oneRequest: number; prefillMs: number };
  /** Median of the per-run ratios ours ÷ peer. */
  oneRequestRatio: number;
  ttftRatio: number;
}

/** Ours at N threads against each peer at N threads, paired run by run. */
export function browserPeerRatios(results: BrowserResults): BrowserPeerRatio[] {
  const rows: BrowserPeerRatio[] = [];
  for (const ours of results.configs.filter((c) => c.side === 'wasm' && c.threads !== null)) {
    for (const theirs of results.configs.filter((c) => (c.side === 'wllama' || c.side === 'transformers') && c.threads === ours.threads)) {
      const paired = (a: number[], b: number[]) => median(a.map((value, i) => value / b[i]!));
      rows.push({
        threads: ours.threads!,
        peer: theirs.side === 'wllama' ? 'wllama' : 'transformers.js',
        ours: { oneRequest: median(ours.oneRequest), prefillMs: median(ours.prefills) },
        theirs: { oneRequest: median(theirs.oneRequest), prefillMs: median(theirs.prefills) },
        oneRequestRatio: paired(ours.oneRequest, theirs.oneRequest),
        ttftRatio: paired(ours.prefills, theirs.prefills),
      });
    }
  }
  return rows;
}

export function browserTables(results: BrowserResults): string {
  const base = results.configs[0]!;
  const configs = formatTable(
    results.configs.map((c) => ({
      config: c.name,
      'runs on': c.runsOn,
      tokens: c.tokens,
      'steps/s': median(c.rates),
      'min..max': `${Math.min(...c.rates).toFixed(1)}..${Math.max(...c.rates).toFixed(1)}`,
      'prefill ms': median(c.prefills),
      'one request tok/s': median(c.oneRequest),
      [`vs ${base.name}`]: `${(median(c.rates) / median(base.rates)).toFixed(2)}×`,
    })),
  );
  const peers = formatTable(
    browserPeerRatios(results).map((r) => ({
      threads: r.threads,
      peer: r.peer,
      'ours tok/s': r.ours.oneRequest,
      'peer tok/s': r.theirs.oneRequest,
      'ours ÷ peer': `${r.oneRequestRatio.toFixed(2)}×`,
      'ours TTFT ms': r.ours.prefillMs,
      'peer TTFT ms': r.theirs.prefillMs,
      'TTFT ours ÷ peer': `${r.ttftRatio.toFixed(2)}×`,
    })),
  );
  return `${configs}\n\nSame threads, paired runs (one request = tokens ÷ (TTFT + decode)):\n\n${peers}`;
}

async function main(): Promise<void> {
  const runs = Number(process.env.BENCH_RUNS ?? 7);
  const configs = process.env.BENCH_CONFIGS?.split(',') ?? DEFAULT_BROWSER_CONFIGS;
  const results = await benchBrowser({ runs, configs, log: console.log });
  const load = (l: number[]) => l.map((v) => v.toFixed(2)).join(' ');
  console.log(`\n## In-page engine and browser peers, decode steps/s (greedy, batch 1), median of ${runs} alternating runs; load average ${load(results.loadAverage.before)} before, ${load(results.loadAverage.after)} after\n`);
  console.log(browserTables(results));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
