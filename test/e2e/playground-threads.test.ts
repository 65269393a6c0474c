/**
 * The page is served cross-origin isolated (COOP/COEP), so onnxruntime-web's WASM backend
 * runs on several threads (SharedArrayBuffer + Web Workers), and still gives the reference
 * greedy tokens and the server's seeded text.
 */
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { golden } from '../helpers/model.js';
import {
  askServer,
  closeContexts,
  finishedText,
  launchChromium,
  openPlayground,
  pickEngine,
  setParam,
  shownRequestBody,
  startPlaygroundServer,
  type PlaygroundServer,
  BROWSER_TEST_TIMEOUT,
} from './playground-harness.js';

let server: PlaygroundServer;
let browser: Browser;

describe('playground, cross-origin isolated, WASM on several threads', { timeout: BROWSER_TEST_TIMEOUT }, () => {
  beforeAll(async () => {
    server = await startPlaygroundServer('threads');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });
  afterEach(closeContexts);

  it('sends COOP/COEP with the page and its files', async () => {
    for (const path of ['', 'playground/playground.js', 'playground/ort/ort-wasm-simd-threaded.wasm', 'playground/model/onnx/model.onnx']) {
      const response = await fetch(new URL(path, server.baseUrl));
      expect(response.status).toBe(200);
      expect(response.headers.get('cross-origin-opener-policy')).toBe('same-origin');
      expect(response.headers.get('cross-origin-embedder-policy')).toBe('require-corp');
      await response.body?.cancel();
    }
  });

  it('runs the embedded model on one thread by default: it is too small to gain from more', async () => {
    const { page, errors } = await openPlayground(browser, server.baseUrl);
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    await pickEngine(page, 'In-page · WASM');
    expect(await page.locator('#engine-status').textContent()).toContain('WebAssembly · 1 thread ·');
    expect(errors).toEqual([]);
  });

  it('runs the in-page WASM engine on more than one thread, with the reference tokens and the server’s seeded text', async () => {
    // As a model of 16 MB or more would by default; the embedded one needs asking.
    const { page, errors } = await openPlayground(browser, `${server.baseUrl}?threads=2`);
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    expect(await page.evaluate(() => typeof SharedArrayBuffer)).toBe('function');
    await page.getByRole('tab', { name: 'Completions' }).click();
    await page.getByLabel('Prompt', { exact: true }).fill('Once upon a time, there was a little');
    await setParam(page, 'max_tokens', '48');
    await setParam(page, 'temperature', '0.9');
    await setParam(page, 'top_k', '40');
    await setParam(page, 'seed', '4321');

    await pickEngine(page, 'In-page · WASM');
    const expectedThreads = 2;
    expect(await page.locator('#engine-status').textContent()).toContain(`WebAssembly · ${expectedThreads} threads`);
    expect(await page.evaluate(async () => (await (window as any).edgeLlm.app('wasm')).threads)).toBe(expectedThreads);

    await page.getByRole('button', { name: 'Send' }).click();
    const inPage = await finishedText(page);
    // onnxruntime's thread pool: its pthreads are Web Workers of this page.
    expect(page.workers().length).toBeGreaterThanOrEqual(expectedThreads - 1);
    const direct = await askServer(server.baseUrl, '/v1/completions', await shownRequestBody(page));
    expect(inPage).toBe(direct.json.choices[0].text);

    const greedy = await page.evaluate(
      async ({ promptTokenIds, maxTokens }) => {
        const edgeLlm = (window as any).edgeLlm;
        const { engine } = await edgeLlm.app('wasm');
        const ids: number[] = [];
        for await (const delta of engine.generate({ promptTokenIds, params: edgeLlm.samplingParams({ temperature: 0, maxTokens }) })) ids.push(...delta.tokenIds);
        return ids;
      },
      { promptTokenIds: golden.prompt_ids, maxTokens: golden.completion_ids.length },
    );
    expect(greedy).toEqual(golden.completion_ids);
    expect(errors).toEqual([]);
  });
});
