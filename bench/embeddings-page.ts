/**
 * The page half of `BENCH_ONLY=embeddings`: embeddings per second for requests of 1, 8 and 64
 * inputs in headless Chromium, our in-page engine (the playground's WASM engine on the
 * embedding folder, `?model=`) against transformers.js's feature-extraction pipeline in a page
 * of its own, on the same ONNX folder, one WASM thread each, medians of interleaved rounds.
 * As the Node half (bench/embeddings.ts), each side is timed at its engine: ours
 * `engine.embed` on the text's token ids (the tokenizer included), the peer its pipeline
 * call; the vectors are checked equal (cosine ≥ 0.9999) before anything is timed.
 *
 *   npx tsx bench/embeddings-page.ts   (BENCH_RUNS, BENCH_EMBEDDING_MODEL as bench/embeddings.ts)
 */
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { basename, extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { build } from 'esbuild';
import { chromium, type Page } from 'playwright-core';
import { buildPlayground } from '../scripts/build-playground.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../scripts/chromium.js';
import { DEFAULT_SERVER_CONFIG } from '../src/config/server-config.js';
import { createApp } from '../src/http/app.js';
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { playgroundRoutes } from '../src/runtime/node/static.js';
import { CROSS_ORIGIN_ISOLATION } from '../src/runtime/playground-files.js';
import { PEER_MODEL_DIR, transformersOrtDist } from './browser-peers/serve.js';
import { cosine, formatTable, median } from './stats.js';
import { EMBEDDING_REQUEST_SIZES, textsOf } from './embedding-inputs.js';



/** The folder's pooling as transformers.js names it, read from sentence-transformers' files. */
async function peerPoolingOf(modelDir: string): Promise<{ pooling: string; normalize: boolean }> {
  const modules = JSON.parse(await readFile(join(modelDir, 'modules.json'), 'utf8')) as Array<{ type: string; path: string }>;
  const poolingModule = modules.find((m) => m.type.endsWith('Pooling'));
  const config = poolingModule ? (JSON.parse(await readFile(join(modelDir, poolingModule.path, 'config.json'), 'utf8')) as Record<string, unknown>) : {};
  const mode = typeof config.pooling_mode === 'string' ? config.pooling_mode : config.pooling_mode_cls_token ? 'cls' : config.pooling_mode_lasttoken ? 'lasttoken' : 'mean';
  return { pooling: mode === 'lasttoken' ? 'last_token' : mode, normalize: modules.some((m) => m.type.endsWith('Normalize')) };
}

const CONTENT_TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };

async function fileUnder(dir: string, relative: string): Promise<Uint8Array | null> {
  const path = normalize(join(dir, relative));
  if (!path.startsWith(dir)) return null;
  return readFile(path).catch(() => null);
}

/** Each page exposes `window.benchEmbed(texts)`; this times `calls` requests of `size` inputs there. */
async function timeIn(page: Page, size: number, calls: number): Promise<number> {
  return page.evaluate(
    async ({ texts, calls }) => {
      const embed = (window as unknown as { benchEmbed(texts: string[]): Promise<unknown> }).benchEmbed;
      const start = performance.now();
      for (let i = 0; i < calls; i += 1) await embed(texts);
      return (calls * texts.length) / ((performance.now() - start) / 1000);
    },
    { texts: textsOf(size), calls },
  );
}

const vectorsIn = (page: Page, texts: string[]): Promise<number[][]> =>
  page.evaluate(async (texts) => (await (window as unknown as { benchEmbed(texts: string[]): Promise<ArrayLike<number>[]> }).benchEmbed(texts)).map((v) => Array.from(v)), texts);

export async function embeddingsPageSection(options: { modelDir?: string; runs?: number } = {}): Promise<void> {
  const modelDir = resolve(options.modelDir ?? process.env.BENCH_EMBEDDING_MODEL ?? 'test/fixtures/embeddings/bert-wordpiece');
  const runs = options.runs ?? Number(process.env.BENCH_RUNS ?? 5);
  const name = basename(modelDir);
  const before = loadavg()[0]!;
  const [, engine, peerScript, peerPooling] = await Promise.all([
    buildPlayground(),
    createNodeEngine({ modelDir: PEER_MODEL_DIR }),
    build({ entryPoints: [fileURLToPath(new URL('./browser-peers/transformers-embeddings-page.ts', import.meta.url))], bundle: true, format: 'esm', platform: 'browser', target: 'es2022', write: false, logLevel: 'error' }).then(
      (result) => result.outputFiles[0]!.text,
    ),
    peerPoolingOf(modelDir),
  ]);
  // The page is served as `npm start` serves it; the folder beside it, as a static host would.
  const app = createApp({ engine, config: DEFAULT_SERVER_CONFIG });
  const ortDist = transformersOrtDist();
  app.get('/models/:rest{.*}', async (c) => {
    const rest = c.req.param('rest');
    if (!rest.startsWith(`${name}/`)) return c.notFound();
    const body = await fileUnder(modelDir, rest.slice(name.length + 1));
    return body === null ? c.notFound() : new Response(body as Uint8Array<ArrayBuffer>, { headers: { ...CROSS_ORIGIN_ISOLATION, 'cache-control': 'no-store' } });
  });
  app.get('/peer/:rest{.*}', async (c) => {
    const rest = c.req.param('rest');
    const headers = { ...CROSS_ORIGIN_ISOLATION, 'content-type': CONTENT_TYPES[extname(rest || 'index.html')] ?? 'application/octet-stream', 'cache-control': 'no-store' };
    if (rest === '' || rest === 'index.html') return new Response('<!doctype html><meta charset="utf-8"><title>embeddings peer</title><script type="module" src="./page.js"></script>', { headers });
    if (rest === 'page.js') return new Response(peerScript, { headers });
    const body = rest.startsWith('ort/') ? await fileUnder(ortDist, rest.slice(4)) : rest.startsWith(`models/${name}/`) ? await fileUnder(modelDir, rest.slice(`models/${name}/`.length)) : null;
    return body === null ? c.notFound() : new Response(body as Uint8Array<ArrayBuffer>, { headers });
  });
  app.route('/', playgroundRoutes({ modelDir: PEER_MODEL_DIR }));
  const server = await new Promise<ReturnType<typeof serve>>((done) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => done(s));
  });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
  try {
    const ours = await (await browser.newContext()).newPage();
    await ours.goto(`${baseUrl}?model=models/${name}/&threads=1`);
    await ours.locator('#target-wasm:not([disabled])').waitFor({ state: 'attached', timeout: 30_000 });
    await ours.locator('label[for="target-wasm"]').click();
    await ours.waitForFunction(() => document.getElementById('engine-status')?.dataset.kind === 'ready', undefined, { timeout: 120_000 });
    const oursRunsOn = await ours.evaluate(async () => {
      const started = await (window as any).edgeLlm.app('wasm');
      if (started.kind !== 'embeddings') throw new Error('the in-page engine did not load the folder as an embedding model');
      const engine = started.engine;
      (window as any).benchEmbed = (texts: string[]) => engine.embed({ inputs: texts.map((text: string) => engine.tokenizer.encode(text)) });
      return started.runsOn as string;
    });
    const peer = await (await browser.newContext()).newPage();
    await peer.goto(`${baseUrl}peer/?threads=1&model=${name}&pooling=${peerPooling.pooling}&normalize=${peerPooling.normalize ? 1 : 0}`);
    await peer.waitForFunction(() => (window as any).peerPage !== undefined, undefined, { timeout: 30_000 });
    const peerRunsOn = await peer.evaluate(async () => {
      const loaded = await (window as any).peerPage;
      (window as any).benchEmbed = (texts: string[]) => loaded.embed(texts);
      return loaded.runsOn as string;
    });

    const check = textsOf(8);
    const [a, b] = [await vectorsIn(ours, check), await vectorsIn(peer, check)];
    const worst = Math.min(...a.map((vector, i) => cosine(vector, b[i]!)));
    if (!(worst >= 0.9999)) throw new Error(`ours and transformers.js disagree in the page (worst cosine ${worst}): no timing`);
    const rows: Record<string, string | number>[] = [];
    for (const size of EMBEDDING_REQUEST_SIZES) {
      const calls = Math.max(2, Math.round(256 / size));
      await timeIn(ours, size, calls);
      await timeIn(peer, size, calls);
      const oursRates: number[] = [];
      const peerRates: number[] = [];
      const ratios: number[] = [];
      for (let round = 0; round < runs; round += 1) {
        // Alternate which side goes first, so a slow phase of the machine hits both.
        let oursRate: number;
        let peerRate: number;
        if (round % 2 === 0) {
          oursRate = await timeIn(ours, size, calls);
          peerRate = await timeIn(peer, size, calls);
        } else {
          peerRate = await timeIn(peer, size, calls);
          oursRate = await timeIn(ours, size, calls);
        }
        oursRates.push(oursRate);
        peerRates.push(peerRate);
        ratios.push(oursRate / peerRate);
      }
      rows.push({
        'inputs a request': size,
        'ours (embeddings/s)': Math.round(median(oursRates)),
        'transformers.js (embeddings/s)': Math.round(median(peerRates)),
        'ours ÷ peer (paired)': median(ratios).toFixed(2),
      });
    }
    console.log(
      `\n## Embeddings in the page (Chromium): ${name}, ours (${oursRunsOn}) vs ${peerRunsOn}, median of ${runs} interleaved rounds ` +
        `(load ${before.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after; worst cosine ${worst.toFixed(6)})\n`,
    );
    console.log(formatTable(rows));
  } finally {
    await browser.close();
    server.close();
    await engine.dispose();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) await embeddingsPageSection();
