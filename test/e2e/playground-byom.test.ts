/**
 * The playground's in-page engine on a brought model, in a real browser: the page URL
 * names a model folder (?model=...&dtype=...), whose variant and external data the page
 * probes and fetches, and the in-page engine answers under that folder's name.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPlayground } from '../../scripts/build-playground.js';
import { DEFAULT_SERVER_CONFIG } from '../../src/config/server-config.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createApp } from '../../src/http/app.js';
import { createNodeEngine } from '../../src/runtime/node-engine.js';
import { playgroundRoutes } from '../../src/runtime/node-static.js';
import { removeFixtureFolders, writeFixtureFolder } from '../helpers/byom-fixtures.js';
import { MODEL_DIR } from '../helpers/model.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];
const WAIT = { timeout: 30_000 };

let engine: LocalEngine;
let server: ServerType;
let baseUrl: string;
let browser: Browser;
let folder: string;

describe('playground with ?model= (a brought model in the page)', () => {
  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH).`);
    folder = await writeFixtureFolder({ files: ['onnx/model_fp16.onnx', 'onnx/model_q4.onnx'], externalDataMaxFileBytes: 30_000 });
    const [, nodeEngine] = await Promise.all([buildPlayground(), createNodeEngine({ modelDir: MODEL_DIR })]);
    engine = nodeEngine;
    const app = createApp({ engine, config: DEFAULT_SERVER_CONFIG });
    // Another model folder on the same origin, as a static host would serve it.
    app.get('/models/mine/*', async (c) => {
      const path = normalize(c.req.path.slice('/models/mine/'.length));
      if (path.startsWith('..')) return c.notFound();
      try {
        const bytes = await readFile(join(folder, path));
        return new Response(c.req.method === 'HEAD' ? null : new Uint8Array(bytes), { headers: { 'content-type': 'application/octet-stream' } });
      } catch {
        return c.notFound();
      }
    });
    app.route('/', playgroundRoutes({ modelDir: MODEL_DIR }));
    await new Promise<void>((resolve) => {
      server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => {
        baseUrl = `http://127.0.0.1:${info.port}/`;
        resolve();
      });
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    await engine?.dispose();
    await removeFixtureFolders();
  });

  it('loads the dtype variant and its external data files and answers in the page', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const requests: string[] = [];
    page.on('request', (request) => requests.push(`${request.method()} ${new URL(request.url()).pathname}`));
    await page.goto(`${baseUrl}?model=/models/mine/&dtype=q4`);
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('stories260k');
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
    await context.close();
  });
});
