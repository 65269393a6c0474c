/**
 * The page itself under its service worker: once an in-page engine has started, a reload
 * with the server gone still opens the page (cross-origin isolated, so with threads), the
 * in-page engine gives the server's seeded text, and API calls fail instead of being
 * answered from a cache. "Clear cached files" removes the worker and its caches.
 */
import { readFile } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
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
  OUTPUT_DIR,
} from './playground-harness.js';

let browser: Browser;
const servers: PlaygroundServer[] = [];

async function serve(extraRoutes?: Parameters<typeof startPlaygroundServer>[1]): Promise<PlaygroundServer> {
  const server = await startPlaygroundServer('service-worker', extraRoutes);
  servers.push(server);
  return server;
}

const SHELL_PREFIX = 'edge-llm-playground-shell-';

function shellCaches(page: Page): Promise<string[]> {
  return page.evaluate(async (prefix) => (await caches.keys()).filter((name) => name.startsWith(prefix)), SHELL_PREFIX);
}

async function seededCompletion(page: Page): Promise<void> {
  await page.getByRole('tab', { name: 'Completions' }).click();
  await page.getByLabel('Prompt', { exact: true }).fill('Once upon a time, there was a little');
  await setParam(page, 'max_tokens', '32');
  await setParam(page, 'temperature', '0.9');
  await setParam(page, 'seed', '77');
}

const PAGE_KEPT = / The page reloads without its server\.$/;

/** What the page gets for an API call, as a person's script in it would see it. */
function apiCall(page: Page, path: string, init?: RequestInit): Promise<string> {
  return page.evaluate(
    async ({ path, init }) => {
      try {
        const response = await fetch(path, init);
        return `HTTP ${response.status}`;
      } catch (error) {
        return `failed: ${(error as Error).name}`;
      }
    },
    { path, init },
  );
}

describe('playground offline: the page under its service worker', { timeout: BROWSER_TEST_TIMEOUT }, () => {
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    for (const server of servers) await server.close();
  });
  afterEach(closeContexts);

  it('reloads with the server gone: isolated, threads, the same seeded text in-page, API calls fail', async () => {
    const server = await serve();
    const { page, errors } = await openPlayground(browser, server.baseUrl);
    await seededCompletion(page);
    const fromServer = (await askServer(server.baseUrl, '/v1/completions', await shownRequestBody(page))).json.choices[0].text;
    // Only an in-page engine makes an offline page useful: no worker before one starts.
    expect(await page.evaluate(() => navigator.serviceWorker.getRegistrations().then((r) => r.length))).toBe(0);
    await pickEngine(page, 'In-page · WASM');
    await expect.poll(() => page.locator('#cache-status').textContent(), WAIT).toMatch(PAGE_KEPT);
    await page.getByRole('button', { name: 'Send' }).click();
    expect(await finishedText(page)).toBe(fromServer);
    // API answers went to the network: the page's caches hold files of the playground only.
    expect(await apiCall(page, '/v1/models')).toBe('HTTP 200');
    const cachedUrls = await page.evaluate(async () => {
      const urls: string[] = [];
      for (const name of await caches.keys()) for (const request of await (await caches.open(name)).keys()) urls.push(new URL(request.url).pathname);
      return urls;
    });
    expect(cachedUrls).toContain('/');
    expect(cachedUrls).toContain('/playground/playground.js');
    expect(cachedUrls.every((path) => path === '/' || path.startsWith('/playground/'))).toBe(true);

    await server.close();
    await expect(fetch(server.baseUrl)).rejects.toThrow();
    await page.reload();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('running in this page');
    expect(await page.evaluate(() => navigator.serviceWorker.controller?.scriptURL)).toBe(`${server.baseUrl}playground/service-worker.js`);
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    await seededCompletion(page);
    await page.getByRole('button', { name: 'Send' }).click();
    expect(await finishedText(page)).toBe(fromServer);

    // API calls are never answered from a cache: with the server gone they fail.
    expect(await apiCall(page, '/v1/models')).toBe('failed: TypeError');
    expect(await apiCall(page, '/health')).toBe('failed: TypeError');
    expect(
      await apiCall(page, '/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'Once', max_tokens: 4 }) }),
    ).toBe('failed: TypeError');
    // The server's engine says so, and the page points to the in-page one.
    await page.getByText('Server', { exact: true }).click();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('No server answers here');

    // Several WASM threads offline too: the worker's copies carry COOP/COEP.
    await page.goto(`${server.baseUrl}?threads=2`);
    await pickEngine(page, 'In-page · WASM');
    expect(await page.locator('#engine-status').textContent()).toContain('WebAssembly · 2 threads');
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    await seededCompletion(page);
    await page.getByRole('button', { name: 'Send' }).click();
    expect(await finishedText(page)).toBe(fromServer);
    expect(errors).toEqual([]);
  });

  it('Clear cached files removes the service worker and its caches: the next reload needs the server', async () => {
    const server = await serve();
    const { page, errors } = await openPlayground(browser, server.baseUrl);
    await pickEngine(page, 'In-page · WASM');
    await expect.poll(() => page.locator('#cache-status').textContent(), WAIT).toMatch(PAGE_KEPT);
    expect(await page.evaluate(async () => (await caches.keys()).filter((name) => name.startsWith('edge-llm-playground-shell-')).length)).toBe(1);

    await page.getByRole('button', { name: 'Clear cached files' }).click();
    await expect.poll(() => page.locator('#cache-status').textContent(), WAIT).toBe('Nothing cached for offline use yet.');
    expect(await page.evaluate(async () => caches.keys())).toEqual([]);
    expect(await page.evaluate(() => navigator.serviceWorker.getRegistrations().then((r) => r.length))).toBe(0);
    // The page's later requests (a chunk loaded now) fill no cache behind the visitor's back.
    await page.getByText('Server', { exact: true }).click();
    expect(await page.evaluate(async () => caches.keys())).toEqual([]);

    await server.close();
    await expect(page.reload()).rejects.toThrow(/ERR_CONNECTION_REFUSED/);
    expect(errors).toEqual([]);
  });

  it('a rebuilt page gets a cache of its own and the previous build’s is deleted', async () => {
    // The same build under another version, as a rebuilt page would be (its script's bytes change).
    let rebuilt = false;
    const server = await serve((app) =>
      app.get('/playground/service-worker.js', async (c, next) => {
        if (!rebuilt) return next();
        const script = await readFile(`${OUTPUT_DIR}/bundles/service-worker/service-worker.js`, 'utf8');
        const version = /version:"([0-9a-f]+)"/.exec(script)![1]!;
        const headers = { 'content-type': 'text/javascript; charset=utf-8', 'service-worker-allowed': '../', 'cache-control': 'no-cache' };
        return new Response(script.replace(`version:"${version}"`, 'version:"rebuilt"'), { headers });
      }),
    );
    const { page, errors } = await openPlayground(browser, server.baseUrl);
    await pickEngine(page, 'In-page · WASM');
    await expect.poll(() => page.locator('#cache-status').textContent(), WAIT).toMatch(PAGE_KEPT);
    const [first] = await shellCaches(page);
    expect(first).toMatch(/^edge-llm-playground-shell-[0-9a-f]{16}$/);

    rebuilt = true;
    await page.reload(); // the browser checks the worker's script on navigation
    await expect.poll(() => shellCaches(page), WAIT).toEqual([`${SHELL_PREFIX}rebuilt`]);
    // The engine's files are not the worker's: still cached once, not copied.
    expect(await page.evaluate(async () => (await caches.keys()).filter((name) => !name.startsWith('edge-llm-playground-shell-')))).toEqual(['edge-llm-playground-v1']);
    await server.close();
    await page.reload();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('running in this page');
    expect(errors).toEqual([]);
  });
});
