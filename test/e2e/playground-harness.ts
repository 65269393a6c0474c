/**
 * What the playground's browser tests share: Debian's Chromium (driven by playwright-core,
 * with a software WebGPU adapter), the real app serving the page on a free port, and
 * helpers that act on the page as a person would.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { buildPlayground } from '../../scripts/build-playground.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../scripts/chromium.js';
import { DEFAULT_SERVER_CONFIG } from '../../src/config/server-config.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createApp } from '../../src/http/app.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { playgroundRoutes } from '../../src/runtime/node/static.js';
import { MODEL_DIR, REPO_ROOT } from '../helpers/model.js';

export const CHROMIUM = CHROMIUM_PATH;
export { CHROMIUM_ARGS };
export const OUTPUT_DIR = `${REPO_ROOT}test-output`;
/**
 * Generous: the whole suite shares two cores with this browser, and WebGPU on SwiftShader
 * runs at ~10 tokens/s on an idle machine.
 */
export const WAIT = { timeout: 60_000 };
/** Per test of the browser files (vitest's default here is 60 s). */
export const BROWSER_TEST_TIMEOUT = 180_000;

export const CHROMIUM_MISSING = existsSync(CHROMIUM)
  ? null
  : `Chromium is missing at ${CHROMIUM}: the playground's end-to-end tests need a real browser. ` +
    'On Debian: apt-get update && apt-get install -y chromium (or set CHROMIUM_PATH).';

export interface PlaygroundServer {
  baseUrl: string;
  engine: LocalEngine;
  /** Stops answering (the page is then on its own); idempotent. */
  close(): Promise<void>;
}

/**
 * The app as `npm start` serves it, with the playground mounted, on a free port. Each test
 * file builds the page's script into its own folder, so files can run in parallel.
 */
export async function startPlaygroundServer(
  name: string,
  /** Registers more routes (e.g. another model folder) before the playground's own. */
  extraRoutes?: (app: ReturnType<typeof createApp>) => void,
): Promise<PlaygroundServer> {
  if (CHROMIUM_MISSING) throw new Error(CHROMIUM_MISSING);
  const bundleDir = `${OUTPUT_DIR}/bundles/${name}`;
  const [, engine] = await Promise.all([buildPlayground({ outDir: bundleDir }), createNodeEngine({ modelDir: MODEL_DIR })]);
  const app = createApp({ engine, config: DEFAULT_SERVER_CONFIG });
  extraRoutes?.(app);
  app.route('/', playgroundRoutes({ modelDir: MODEL_DIR, bundleDir }));
  await mkdir(OUTPUT_DIR, { recursive: true });
  let server: ServerType | undefined;
  const baseUrl = await new Promise<string>((resolve) => {
    server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => resolve(`http://127.0.0.1:${info.port}/`));
  });
  let closed: Promise<void> | undefined;
  return {
    baseUrl,
    engine,
    close: () => {
      closed ??= (async () => {
        await new Promise((resolve) => {
          server!.close(resolve);
          // Open keep-alive connections would hold the close back.
          (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        });
        await engine.dispose();
      })();
      return closed;
    },
  };
}

/** Serves `folder` under `prefix` (GET and HEAD), as a static host serves a model folder. */
export function serveFolder(app: ReturnType<typeof createApp>, prefix: string, folder: string): void {
  app.on(['GET', 'HEAD'], `${prefix}*`, async (c) => {
    const path = normalize(c.req.path.slice(prefix.length));
    if (path.startsWith('..')) return c.notFound();
    try {
      const bytes = await readFile(join(folder, path));
      return new Response(c.req.method === 'HEAD' ? null : new Uint8Array(bytes), { headers: { 'content-type': 'application/octet-stream' } });
    } catch {
      return c.notFound();
    }
  });
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/** Browser contexts a test opened, closed after each test by `closeContexts`. */
const contexts: BrowserContext[] = [];

export async function closeContexts(): Promise<void> {
  for (const context of contexts.splice(0)) await context.close();
}

/** A fresh context (empty storage and caches) whose page fails the test on any script error. */
export async function openPlayground(
  browser: Browser,
  baseUrl: string,
  viewport = { width: 1280, height: 900 },
  /** Runs in the page before its own scripts (e.g. to instrument WebGPU). */
  initScript?: () => void,
): Promise<{ page: Page; context: BrowserContext; errors: string[] }> {
  const context = await browser.newContext({ viewport });
  contexts.push(context);
  const page = await context.newPage();
  if (initScript) await page.addInitScript(initScript);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(baseUrl);
  // The page asked the server which model it serves.
  await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('stories260k');
  return { page, context, errors };
}

export async function setParam(page: Page, name: string, value: string): Promise<void> {
  const field = page.getByLabel(name, { exact: true });
  if (!(await field.isVisible())) await page.locator(`[data-param="${name}"]`).locator('xpath=ancestor::details').locator('summary').click();
  await field.fill(value);
}

/** The request body exactly as the page shows it (and sends it). */
export async function shownRequestBody(page: Page): Promise<Record<string, unknown>> {
  const text = (await page.locator('#inspect-request-text').textContent()) ?? '';
  return JSON.parse(text.slice(text.indexOf('\n\n') + 2)) as Record<string, unknown>;
}

/** Asks the server directly, from Node, without streaming. */
export async function askServer(baseUrl: string, path: string, body: Record<string, unknown>): Promise<{ status: number; json: any }> {
  const { stream: _stream, stream_options: _options, ...rest } = body;
  const response = await fetch(new URL(path, baseUrl), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rest) });
  return { status: response.status, json: await response.json() };
}

/** Waits for the first sequence to finish (stop or length) and returns its text. */
export async function finishedText(page: Page): Promise<string> {
  await page.locator('.choice .badge.stop, .choice .badge.length').first().waitFor(WAIT);
  return (await page.locator('.choice .output').first().textContent()) ?? '';
}

/** Picks an engine in the top bar and waits until it is ready. */
export async function pickEngine(page: Page, label: 'Server' | 'In-page · WASM' | 'In-page · WebGPU'): Promise<void> {
  await page.getByText(label, { exact: true }).click();
  const ready = label === 'Server' ? 'context' : 'running in this page';
  await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain(ready);
}

/** Records every text of the engine status line (read with `seenStatuses`). */
export async function watchStatus(page: Page): Promise<void> {
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { statuses: string[] }).statuses = seen;
    const line = document.getElementById('engine-status')!;
    new MutationObserver(() => seen.push(line.textContent ?? '')).observe(line, { subtree: true, childList: true, characterData: true });
  });
}

export const seenStatuses = (page: Page): Promise<string[]> => page.evaluate(() => (window as unknown as { statuses: string[] }).statuses);

/** Records every text the first output shows, in order, as the DOM changes (read with `seenTexts`). */
export async function watchOutput(page: Page): Promise<void> {
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { seen: string[] }).seen = seen;
    new MutationObserver(() => {
      const output = document.querySelector('#choices .choice .output');
      const text = output ? [...output.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent).join('') : '';
      if (text !== seen[seen.length - 1]) seen.push(text);
    }).observe(document.getElementById('choices')!, { subtree: true, childList: true, characterData: true });
  });
}

export async function seenTexts(page: Page): Promise<string[]> {
  return (await page.evaluate(() => (window as unknown as { seen: string[] }).seen)).filter((t) => t !== '');
}

/** The text grew in several steps, each a prefix of the final text: it streamed. */
export function expectStreamed(seen: string[], final: string, minSteps = 3): void {
  expect(seen.at(-1)).toBe(final);
  expect(seen.length).toBeGreaterThanOrEqual(minSteps);
  for (let i = 1; i < seen.length; i++) {
    expect(seen[i]!.length).toBeGreaterThan(seen[i - 1]!.length);
    expect(final.startsWith(seen[i - 1]!)).toBe(true);
  }
}
