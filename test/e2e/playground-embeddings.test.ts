/**
 * The playground's Embeddings tab in a real browser (Debian's Chromium, driven by
 * playwright-core), on a page served by the real app with an embedding model
 * (test/fixtures/embeddings/bert-wordpiece): the vectors' norms and values, the similarity
 * table and the picture drawn from it, checked against sentence-transformers' `encode` on
 * the same weights (reference.json); an error in the API's shape shown inline.
 */
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildPlayground } from '../../scripts/build-playground.js';
import { DEFAULT_SERVER_CONFIG } from '../../src/config/server-config.js';
import type { EmbeddingEngine } from '../../src/embeddings/embedding-engine.js';
import { createApp } from '../../src/http/app.js';
import { createNodeEmbeddingEngine } from '../../src/runtime/node/embedding-engine.js';
import { playgroundRoutes } from '../../src/runtime/node/static.js';
import { REPO_ROOT } from '../helpers/model.js';
import { BROWSER_TEST_TIMEOUT, CHROMIUM_MISSING, closeContexts, launchChromium, OUTPUT_DIR, WAIT } from './playground-harness.js';
import { cosine } from '../helpers/vectors.js';

const MODEL_DIR = join(REPO_ROOT, 'test/fixtures/embeddings/bert-wordpiece');
const reference = JSON.parse(readFileSync(join(MODEL_DIR, 'reference.json'), 'utf8')) as { texts: string[]; batched: number[][] };
const ROWS = [0, 1, 2, 3];
const texts = ROWS.map((i) => reference.texts[i]!);
const want = ROWS.map((i) => reference.batched[i]!);


let engine: EmbeddingEngine;
let server: ServerType;
let baseUrl: string;
let browser: Browser;

it('has Chromium to run the playground in', () => {
  if (CHROMIUM_MISSING) throw new Error(CHROMIUM_MISSING);
});

describe('the playground’s Embeddings tab', { timeout: BROWSER_TEST_TIMEOUT }, () => {
  beforeAll(async () => {
    const bundleDir = `${OUTPUT_DIR}/bundles/playground-embeddings`;
    [, engine] = await Promise.all([
      buildPlayground({ outDir: bundleDir }),
      createNodeEmbeddingEngine({ modelDir: MODEL_DIR, limits: { maxRunningSequences: 64, maxBatchedTokens: 8192, maxWaitingRequests: 16 }, intraOpNumThreads: 1 }),
    ]);
    const app = createApp({ engine, embeddings: engine, config: { ...DEFAULT_SERVER_CONFIG, servedModelName: 'bert-wordpiece' } });
    app.route('/', playgroundRoutes({ modelDir: MODEL_DIR, bundleDir }));
    await mkdir(OUTPUT_DIR, { recursive: true });
    baseUrl = await new Promise<string>((resolve) => {
      server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => resolve(`http://127.0.0.1:${info.port}/`));
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
    await engine?.dispose();
  });

  afterEach(closeContexts);

  it('shows the vectors, their norms and the similarity of the inputs as sentence-transformers computes them, drawn as a picture', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(baseUrl);
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('bert-wordpiece');

    await page.getByRole('tab', { name: 'Embeddings' }).click();
    expect(await page.getByRole('tab', { name: 'Embeddings' }).getAttribute('aria-selected')).toBe('true');
    // The generation request panels step aside.
    expect(await page.locator('#send').isVisible()).toBe(false);
    await page.locator('#embeddings-inputs').fill(texts.join('\n'));
    await page.locator('#embed').click();
    await expect.poll(() => page.locator('#embeddings-status').textContent(), WAIT).toMatch(/^4 vectors × 32 dimensions from bert-wordpiece, \d+ tokens/);

    const norms = await page.locator('#embeddings-vectors td.norm').allTextContents();
    expect(norms).toEqual(['1.0000', '1.0000', '1.0000', '1.0000']);
    const values = (await page.locator('#embeddings-vectors td.values').allTextContents()).map((row) => row.replace(', …', '').split(', ').map(Number));
    values.forEach((row, i) => row.forEach((value, k) => expect(Math.abs(value - want[i]![k]!), `input ${i} value ${k}`).toBeLessThanOrEqual(1.5e-4)));

    const cells = await page.locator('#embeddings-similarity tr').evaluateAll((rows) => rows.slice(1).map((row) => Array.from(row.querySelectorAll('td')).map((td) => Number(td.textContent))));
    expect(cells.length).toBe(4);
    cells.forEach((row, i) => row.forEach((value, j) => expect(Math.abs(value - cosine(want[i]!, want[j]!)), `pair ${i}, ${j}`).toBeLessThanOrEqual(1.5e-3)));

    // The picture: one cell a pair, red for 1 (the diagonal), fading to white at 0, blue below.
    const pixels = await page.locator('#embeddings-matrix').evaluate((canvas: HTMLCanvasElement) => {
      const cell = canvas.width / 4;
      const context = canvas.getContext('2d')!;
      return [0, 1, 2, 3].map((i) => [0, 1, 2, 3].map((j) => Array.from(context.getImageData(j * cell + cell / 2, i * cell + cell / 2, 1, 1).data.slice(0, 3))));
    });
    pixels.forEach((row, i) =>
      row.forEach(([r, g, b], j) => {
        const similarity = cosine(want[i]!, want[j]!);
        const strength = 255 - Math.min(r!, g!, b!);
        // The colour's side says the sign, its depth the size (within rounding).
        if (similarity > 0.02) expect(r, `pair ${i}, ${j}`).toBe(255);
        if (similarity < -0.02) expect(b, `pair ${i}, ${j}`).toBe(255);
        expect(Math.abs(strength - Math.round(215 * Math.abs(similarity))), `pair ${i}, ${j}`).toBeLessThanOrEqual(2);
      }),
    );
    expect(errors).toEqual([]);
  });

  it('shows the server’s refusal inline, and the generation tabs come back', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(baseUrl);
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('bert-wordpiece');
    await page.getByRole('tab', { name: 'Embeddings' }).click();
    await page.locator('#embeddings-dimensions').fill('8');
    await page.locator('#embed').click();
    await expect.poll(() => page.locator('#embeddings-error').textContent(), WAIT).toMatch(/^400: .*does not support matryoshka representation/);
    await page.getByRole('tab', { name: 'Chat' }).click();
    expect(await page.locator('#send').isVisible()).toBe(true);
    expect(await page.locator('#embeddings-panel').isVisible()).toBe(false);
  });
});
