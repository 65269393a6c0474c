/**
 * The in-page engine's files in Cache Storage: a reload starts the engine from the cache
 * with the network blocked, the Clear button empties it, and once loaded the page keeps
 * working in-page after the server is gone.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
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
  WAIT,
  type PlaygroundServer,
  BROWSER_TEST_TIMEOUT,
} from './playground-harness.js';

let server: PlaygroundServer;
let browser: Browser;

const ENGINE_FILES = ['**/playground/ort/**', '**/playground/model/**'];

async function seededCompletion(page: Page): Promise<void> {
  await page.getByRole('tab', { name: 'Completions' }).click();
  await page.getByLabel('Prompt', { exact: true }).fill('Once upon a time, there was a little');
  await setParam(page, 'max_tokens', '32');
  await setParam(page, 'temperature', '0.9');
  await setParam(page, 'seed', '77');
}

/** Blocks the engine's files; returns what the page still tried to fetch. */
async function blockEngineFiles(context: BrowserContext): Promise<string[]> {
  const attempts: string[] = [];
  for (const pattern of ENGINE_FILES) {
    await context.route(pattern, (route) => {
      attempts.push(route.request().url());
      return route.abort('internetdisconnected');
    });
  }
  return attempts;
}

describe('playground offline: the engine’s files cached in the page', { timeout: BROWSER_TEST_TIMEOUT }, () => {
  beforeAll(async () => {
    server = await startPlaygroundServer('offline');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });
  afterEach(closeContexts);

  it('starts the engine from the cache after a reload with the network blocked, and clears it on request', async () => {
    const { page, context, errors } = await openPlayground(browser, server.baseUrl);
    await expect.poll(() => page.locator('#cache-status').textContent(), WAIT).toBe('Nothing cached for offline use yet.');
    await pickEngine(page, 'In-page · WASM');
    await expect.poll(() => page.locator('#cache-status').textContent(), WAIT).toMatch(/^Cached for offline use: 1[34]\.\d MB in 6 files\. The page reloads without its server\.$/);

    await page.reload();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('running in this page');
    // The in-page engine was remembered; now the same, with its files unreachable.
    const attempts = await blockEngineFiles(context);
    // Every text of the status line from the start of the next load.
    await page.addInitScript(() => {
      const seen: string[] = ((window as any).statuses = []);
      document.addEventListener('DOMContentLoaded', () => {
        const line = document.getElementById('engine-status')!;
        new MutationObserver(() => seen.push(line.textContent ?? '')).observe(line, { subtree: true, childList: true, characterData: true });
      });
    });
    await page.reload();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('running in this page');
    const statuses = await page.evaluate(() => (window as any).statuses as string[]);
    expect(attempts.length).toBeGreaterThan(0); // it did try to revalidate, and failed
    expect(statuses.some((s) => s.includes('ort-wasm-simd-threaded.wasm') && s.includes('(100%) from cache'))).toBe(true);

    await seededCompletion(page);
    const fromServer = (await askServer(server.baseUrl, '/v1/completions', await shownRequestBody(page))).json.choices[0].text;
    await page.getByRole('button', { name: 'Send' }).click();
    expect(await finishedText(page)).toBe(fromServer);

    await page.getByRole('button', { name: 'Clear cached files' }).click();
    await expect.poll(() => page.locator('#cache-status').textContent(), WAIT).toBe('Nothing cached for offline use yet.');
    expect(await page.evaluate(async () => (await caches.keys()).length)).toBe(0);
    // Without the cache and the network, the engine cannot start again: the page says why.
    await page.reload();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('Cannot download');
    expect(errors).toEqual([]);
  });

  it('keeps answering in-page, and benchmarks the engine, after the server is gone', async () => {
    const { page, errors } = await openPlayground(browser, server.baseUrl);
    await seededCompletion(page);
    const fromServer = (await askServer(server.baseUrl, '/v1/completions', await shownRequestBody(page))).json.choices[0].text;
    await pickEngine(page, 'In-page · WASM');
    await server.close();
    await expect(fetch(server.baseUrl)).rejects.toThrow();

    await page.getByRole('button', { name: 'Send' }).click();
    expect(await finishedText(page)).toBe(fromServer);
    await page.getByRole('button', { name: 'Benchmark the in-page engine' }).click();
    await expect.poll(() => page.locator('#benchmark-result').textContent(), { timeout: 40_000 }).toMatch(
      /^In-page · WASM: \d+\.\d tokens\/s decoding, first token in \d+ ms \(greedy, one sequence, median of 3 runs of 64 tokens\)\.$/,
    );
    expect(errors).toEqual([]);
  });
});
