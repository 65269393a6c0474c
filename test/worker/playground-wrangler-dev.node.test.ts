/**
 * The playground on the Worker home, as `npm run dev` serves it: wrangler's [build] writes
 * dist/worker-assets/ and workerd serves it as static assets before the Worker. The page
 * and every file it loads carry COOP/COEP, so in Chromium the page is cross-origin
 * isolated and in-page WASM runs on several threads. WebGPU runs on onnxruntime's `jspi`
 * build (its usual one is over the 25 MiB asset limit); a browser without JavaScript Promise
 * Integration is told why it gets no WebGPU engine. Once loaded, the page reloads without the Worker.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKER_ASSET_MAX_BYTES } from '../../scripts/build-worker-assets.js';
import { REPO_ROOT } from '../helpers/model.js';
import {
  BROWSER_TEST_TIMEOUT,
  closeContexts,
  finishedText,
  launchChromium,
  openPlayground,
  pickEngine,
  setParam,
  shownRequestBody,
  WAIT,
} from '../e2e/playground-harness.js';

process.env.WRANGLER_SEND_METRICS = 'false';
process.env.CLOUDFLARE_CF_FETCH_ENABLED = 'false';
process.env.WRANGLER_HIDE_BANNER = 'true';
const { unstable_startWorker } = await import('wrangler');

let worker: Awaited<ReturnType<typeof unstable_startWorker>> | undefined;
let baseUrl: string;
let browser: Browser;

beforeAll(async () => {
  [worker, browser] = await Promise.all([
    unstable_startWorker({
      config: `${REPO_ROOT}wrangler.toml`,
      dev: { server: { hostname: '127.0.0.1', port: 0 }, inspector: false, watch: false, persist: false, remote: false, logLevel: 'warn' },
    }),
    launchChromium(),
  ]);
  baseUrl = `${(await worker.url).origin}/`;
}, 120_000);

afterAll(async () => {
  await closeContexts();
  await browser?.close();
  await worker?.dispose();
});

function expectIsolated(response: Response, what: string): void {
  expect(response.status, what).toBe(200);
  expect(response.headers.get('cross-origin-opener-policy'), what).toBe('same-origin');
  expect(response.headers.get('cross-origin-embedder-policy'), what).toBe('require-corp');
  expect(response.headers.get('cross-origin-resource-policy'), what).toBe('same-origin');
}

describe('the playground on the Worker home (wrangler dev)', { timeout: BROWSER_TEST_TIMEOUT }, () => {
  it('serves the page and every file it loads with COOP/COEP, each under the 25 MiB asset limit', async () => {
    const page = await fetch(baseUrl);
    expectIsolated(page, '/');
    const html = await page.text();
    const referenced = [...html.matchAll(/(?:href|src)="(playground\/[^"]+)"/g)].map((match) => match[1]!);
    expect(referenced).toEqual(expect.arrayContaining(['playground/playground.css', 'playground/playground.js', 'playground/icon.svg']));
    const engineFiles = ['playground/ort/ort-wasm-simd-threaded.wasm', 'playground/ort/ort-wasm-simd-threaded.jspi.wasm', 'playground/model/config.json', 'playground/model/tokenizer.json', 'playground/model/onnx/model.onnx'];
    for (const path of [...new Set(referenced), ...engineFiles, 'playground/service-worker.js']) {
      const response = await fetch(new URL(path, baseUrl));
      expectIsolated(response, path);
      expect(Number(response.headers.get('content-length') ?? (await response.clone().arrayBuffer()).byteLength), path).toBeLessThanOrEqual(WORKER_ASSET_MAX_BYTES);
      await response.arrayBuffer();
    }
    expect((await fetch(new URL('playground/ort/ort-wasm-simd-threaded.wasm', baseUrl))).headers.get('content-type')).toBe('application/wasm');
    // The service worker may control the page one folder up.
    expect((await fetch(new URL('playground/service-worker.js', baseUrl))).headers.get('service-worker-allowed')).toBe('../');
    // The usual WebGPU build is not there; the page is told which one is.
    expect((await fetch(new URL('playground/ort/ort-wasm-simd-threaded.asyncify.wasm', baseUrl))).status).toBe(404);
    expect(html).toContain('<meta name="edge-llm-webgpu-build" content="jspi">');
    // The API is still the Worker's, not an asset.
    const models = await fetch(new URL('v1/models', baseUrl));
    expect(models.status).toBe(200);
    expect(((await models.json()) as { data: { id: string }[] }).data[0]!.id).toBe('stories260k');
  });

  it('tells a browser without JavaScript Promise Integration why it gets no WebGPU engine here', async () => {
    const { page, errors } = await openPlayground(browser, baseUrl, undefined, () => {
      // As Firefox and Safari are today: WebGPU, but no WebAssembly.Suspending.
      delete (WebAssembly as { Suspending?: unknown }).Suspending;
    });
    const webGpu = page.locator('#target-webgpu');
    await expect.poll(() => webGpu.evaluate((radio) => radio.parentElement!.title), WAIT).toContain('JavaScript Promise Integration');
    expect(await webGpu.evaluate((radio) => radio.parentElement!.title)).toContain('25 MiB');
    expect(await webGpu.isDisabled()).toBe(true);
    await closeContexts();
    expect(errors).toEqual([]);
  });

  it('runs in-page WebGPU (jspi build) and WASM on two threads in the isolated page, with the Worker’s seeded text, and reloads without the Worker', async () => {
    const { page, errors } = await openPlayground(browser, `${baseUrl}?threads=2`);
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    await page.getByRole('tab', { name: 'Completions' }).click();
    await page.getByLabel('Prompt', { exact: true }).fill('Once upon a time, there was a little');
    await setParam(page, 'max_tokens', '32');
    await setParam(page, 'temperature', '0.9');
    await setParam(page, 'seed', '77');
    const body = await shownRequestBody(page);
    const { stream: _stream, stream_options: _options, ...plain } = body;
    const fromWorker = await fetch(new URL('v1/completions', baseUrl), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(plain) });
    expect(fromWorker.status).toBe(200);
    const workerText = ((await fromWorker.json()) as { choices: { text: string }[] }).choices[0]!.text;

    const requests: string[] = [];
    page.on('request', (request) => requests.push(new URL(request.url()).pathname));
    await expect.poll(() => page.locator('#target-webgpu').isDisabled(), WAIT).toBe(false);
    await pickEngine(page, 'In-page · WebGPU');
    expect(await page.locator('#engine-status').textContent()).toContain('WebGPU · KV cache on the GPU');
    expect(requests).toContain('/playground/ort/ort-wasm-simd-threaded.jspi.wasm');
    await page.getByRole('button', { name: 'Send' }).click();
    expect(await finishedText(page)).toBe(workerText);

    await pickEngine(page, 'In-page · WASM');
    expect(await page.locator('#engine-status').textContent()).toContain('WebAssembly · 2 threads');
    expect(await page.evaluate(async () => (await (window as any).edgeLlm.app('wasm')).threads)).toBe(2);
    await page.getByRole('button', { name: 'Send' }).click();
    expect(await finishedText(page)).toBe(workerText);
    await expect.poll(() => page.locator('#cache-status').textContent(), WAIT).toMatch(/The page reloads without its server\.$/);

    await worker!.dispose();
    worker = undefined;
    await expect(fetch(baseUrl)).rejects.toThrow();
    await page.reload();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('WebAssembly · 2 threads');
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    await page.getByRole('button', { name: 'Send' }).click();
    expect(await finishedText(page)).toBe(workerText);
    expect(errors).toEqual([]);
  });
});
