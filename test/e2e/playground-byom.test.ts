/**
 * The playground's in-page engine on a brought model, in a real browser: the page URL
 * names a model folder (?model=...&dtype=...), whose variant and external data the page
 * probes and fetches, and the in-page engine answers under that folder's name.
 */
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { removeFixtureFolders, writeFixtureFolder } from '../helpers/byom-fixtures.js';
import { BROWSER_TEST_TIMEOUT, closeContexts, launchChromium, openPlayground, serveFolder, startPlaygroundServer, WAIT, type PlaygroundServer } from './playground-harness.js';

let server: PlaygroundServer;
let browser: Browser;
let folder: string;

describe('playground with ?model= (a brought model in the page)', { timeout: BROWSER_TEST_TIMEOUT }, () => {
  beforeAll(async () => {
    folder = await writeFixtureFolder({ files: ['onnx/model_fp16.onnx', 'onnx/model_q4.onnx'], externalDataMaxFileBytes: 30_000 });
    // Another model folder on the same origin, as a static host would serve it.
    server = await startPlaygroundServer('byom', (app) => serveFolder(app, '/models/mine/', folder));
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await removeFixtureFolders();
  });
  afterEach(closeContexts);

  it('loads the dtype variant and its external data files and answers in the page', async () => {
    const { page, errors } = await openPlayground(browser, `${server.baseUrl}?model=/models/mine/&dtype=q4`);
    const requests: string[] = [];
    page.on('request', (request) => requests.push(`${request.method()} ${new URL(request.url()).pathname}`));
    await page.getByText('In-page · WASM').click();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('mine running in this page');
    // The fixture's context is 96 tokens: the page's default max_tokens would not fit after the prompt.
    const maxTokens = page.getByLabel('max_tokens', { exact: true });
    if (!(await maxTokens.isVisible())) await page.locator('[data-param="max_tokens"]').locator('xpath=ancestor::details').locator('summary').click();
    await maxTokens.fill('8');
    await page.keyboard.press('Control+Enter');
    await page.locator('.choice .badge.stop, .choice .badge.length').first().waitFor(WAIT);
    expect(await page.locator('#api-error').isHidden()).toBe(true);
    expect(requests).toContain('HEAD /models/mine/onnx/model_q4.onnx');
    expect(requests).toContain('GET /models/mine/onnx/model_q4.onnx');
    expect(requests).toContain('GET /models/mine/onnx/model_q4.onnx_data_1');
    expect(requests.some((r) => r.includes('model_fp16'))).toBe(false);
    expect(errors).toEqual([]);
  });
});
