/**
 * A GGUF run inside the playground page (Debian's Chromium): picked with the file picker
 * (setInputFiles), or given as a URL; the page builds the graph from the file in a Web
 * Worker and serves it on onnxruntime-web. Its greedy text must equal the Node server's on
 * the same file (MODEL_DIR=file.gguf; test/gguf/llama-server-parity.test.ts checks that one
 * against llama.cpp's server), the page shows the startup report's GGUF lines, and its main
 * thread keeps answering while the graph is built.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type RunningServer } from './spawn-server.js';
import {
  BROWSER_TEST_TIMEOUT,
  closeContexts,
  finishedText,
  launchChromium,
  openPlayground,
  seenStatuses,
  serveFolder,
  setParam,
  startPlaygroundServer,
  WAIT,
  watchStatus,
  type PlaygroundServer,
} from './playground-harness.js';

const FIXTURES = new URL('../fixtures/gguf/', import.meta.url).pathname;
const FILE = 'tiny-llama-kquants.gguf';
const PROMPT = 'Once upon a time';
const MAX_TOKENS = 24;

let server: PlaygroundServer;
let node: RunningServer;
let browser: Browser;
const cacheDir = mkdtempSync(join(tmpdir(), 'playground-gguf-'));

/** The Node server's greedy completion of PROMPT on the same file. */
async function nodeCompletion(): Promise<string> {
  const response = await fetch(`${node.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: FILE, prompt: PROMPT, max_tokens: MAX_TOKENS, temperature: 0 }),
  });
  const json = (await response.json()) as { choices: Array<{ text: string }>; usage: { completion_tokens: number } };
  expect(response.status).toBe(200);
  expect(json.usage.completion_tokens).toBeGreaterThan(4);
  return json.choices[0]!.text;
}

/**
 * From before the page's scripts run: a 10 ms heartbeat on the main thread and every
 * engine status with when it was shown, to measure the main thread during the graph build.
 */
function heartbeatAndStatuses(): void {
  const w = window as unknown as { beats: number[]; timedStatuses: Array<[number, string]> };
  w.beats = [];
  w.timedStatuses = [];
  setInterval(() => w.beats.push(performance.now()), 10);
  const watch = () => {
    const line = document.getElementById('engine-status');
    if (!line) return void requestAnimationFrame(watch);
    new MutationObserver(() => w.timedStatuses.push([performance.now(), line.textContent ?? ''])).observe(line, { subtree: true, childList: true, characterData: true });
  };
  watch();
}

/** The build's span (first to last status naming it) and the main thread's longest silence in it. */
async function mainThreadDuringBuild(page: Page): Promise<{ buildMs: number; longestGapMs: number; beats: number }> {
  const { beats, statuses } = await page.evaluate(() => {
    const w = window as unknown as { beats: number[]; timedStatuses: Array<[number, string]> };
    return { beats: w.beats, statuses: w.timedStatuses };
  });
  const building = statuses.filter(([, text]) => text.includes(`${FILE} (building the graph)`)).map(([at]) => at);
  expect(building.length).toBeGreaterThan(2);
  const [start, end] = [building[0]!, building.at(-1)!];
  // The span's edges count as beats: a silence that starts before the build (loading
  // scripts) or lasts past it (creating the session) is not the build's.
  const inside = beats.filter((at) => at > start && at < end);
  const times = [start, ...inside, end];
  let longestGapMs = 0;
  for (let i = 1; i < times.length; i++) longestGapMs = Math.max(longestGapMs, times[i]! - times[i - 1]!);
  return { buildMs: end - start, longestGapMs, beats: inside.length };
}

async function greedyInPage(page: Page, prompt = PROMPT, maxTokens = MAX_TOKENS): Promise<string> {
  await page.getByRole('tab', { name: 'Completions' }).click();
  await page.getByLabel('Prompt', { exact: true }).fill(prompt);
  await setParam(page, 'max_tokens', String(maxTokens));
  await setParam(page, 'temperature', '0');
  await page.keyboard.press('Control+Enter');
  return finishedText(page);
}

describe('playground: a GGUF run in the page', { timeout: BROWSER_TEST_TIMEOUT }, () => {
  beforeAll(async () => {
    [server, node, browser] = await Promise.all([
      // The fixtures on the page's own origin, as a static host would serve a .gguf.
      startPlaygroundServer('gguf', (app) => serveFolder(app, '/ggufs/', FIXTURES)),
      spawnServer({ MODEL_DIR: join(FIXTURES, FILE), GGUF_CACHE_DIR: cacheDir }),
      launchChromium(),
    ]);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await node?.stop();
    rmSync(cacheDir, { recursive: true, force: true });
  });
  afterEach(closeContexts);

  it('runs a GGUF picked from disk, built off the main thread, with the Node server’s greedy text, and shows its startup report', async () => {
    const expected = await nodeCompletion();
    const { page, errors } = await openPlayground(browser, server.baseUrl, undefined, heartbeatAndStatuses);
    await watchStatus(page);
    const workers: string[] = [];
    page.on('worker', (worker) => workers.push(new URL(worker.url()).pathname));
    await page.locator('#gguf-file').setInputFiles(join(FIXTURES, FILE));
    // Picked while on the server engine: the page switches to its WASM engine for the file.
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain(`${FILE} running in this page · WebAssembly`);
    expect(await page.locator('#target-wasm').isChecked()).toBe(true);
    // The file was read with progress while the graph was built.
    expect((await seenStatuses(page)).some((status) => status.includes(`${FILE} (building the graph)`) && /\(\d+%\)/.test(status))).toBe(true);
    // Built in the bundle's worker, while the page's own thread kept its heartbeat: the
    // same build on the main thread leaves it silent for most of the build (see the notes).
    const during = await mainThreadDuringBuild(page);
    console.log(`GGUF build ${during.buildMs.toFixed(0)} ms; main thread: ${during.beats} heartbeats, longest silence ${during.longestGapMs.toFixed(0)} ms`);
    expect(during.beats).toBeGreaterThan(during.buildMs / 10 / 4);
    expect(during.longestGapMs).toBeLessThan(Math.max(250, during.buildMs / 4));
    expect(workers).toContain('/playground/gguf-worker.js');
    const report = (await page.locator('#gguf-report-text').textContent()) ?? '';
    expect(report).toMatch(/GGUF: architecture llama/);
    expect(report).toMatch(/GGUF Q4_K ×\d+: MatMulNBits\/GatherBlockQuantized/);
    expect(report).toMatch(/GGUF Q6_K ×\d+:/);
    expect(report).toContain('built in a Web Worker of this page, executed by onnxruntime-web (WebAssembly)');
    expect(report).toContain('Model inputs:');
    expect(await page.locator('#inpage-report').isVisible()).toBe(true);
    // The requests name the file's model, as the Node server serves it.
    expect(await greedyInPage(page)).toBe(expected);
    expect(await page.locator('#api-error').isHidden()).toBe(true);
    expect(errors).toEqual([]);
  });

  it('runs a GGUF from a URL, kept in the page’s cache', async () => {
    const expected = await nodeCompletion();
    const { page, errors } = await openPlayground(browser, server.baseUrl);
    const requests: string[] = [];
    page.on('request', (request) => requests.push(`${request.method()} ${new URL(request.url()).pathname}`));
    await page.getByText('In-page · WASM', { exact: true }).click();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('stories260k running in this page');
    await page.locator('#gguf-url').fill(`/ggufs/${FILE}`);
    await page.locator('#gguf-load-url').click();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain(`${FILE} running in this page`);
    expect(requests).toContain(`GET /ggufs/${FILE}`);
    expect(await greedyInPage(page)).toBe(expected);
    // In Cache Storage with the engine's other files (a reload reads it from there).
    const cached = await page.evaluate(async (file) => {
      const cache = await caches.open('edge-llm-playground-v1');
      return (await cache.keys()).some((request) => request.url.endsWith(`/ggufs/${file}`));
    }, FILE);
    expect(cached).toBe(true);
    expect(errors).toEqual([]);
  });

  it("runs a mixture-of-experts GGUF (qwen2moe: onnxruntime-web's MoE kernel) with transformers' greedy text", async () => {
    const file = 'tiny-qwen2moe.gguf';
    const reference = JSON.parse(readFileSync(join(FIXTURES, 'tiny-qwen2moe-reference.json'), 'utf8')) as { generations: Array<{ prompt: string; greedy_ids: number[]; greedy_text: string }> };
    const { prompt, greedy_ids: ids, greedy_text: text } = reference.generations[0]!;
    const { page, errors } = await openPlayground(browser, server.baseUrl);
    await page.getByText('In-page · WASM', { exact: true }).click();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('stories260k running in this page');
    await page.locator('#gguf-url').fill(`/ggufs/${file}`);
    await page.locator('#gguf-load-url').click();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain(`${file} running in this page`);
    expect((await page.locator('#gguf-report-text').textContent()) ?? '').toMatch(/GGUF: architecture qwen2moe .*a shared expert of width 96/);
    expect(await greedyInPage(page, prompt, ids.length)).toBe(text);
    expect(errors).toEqual([]);
  });

  it("runs a float32 GGUF on the page's WebGPU engine (SwiftShader; the fused graph) with transformers' greedy text", async () => {
    // The inplace graph Node builds failed WebGPU's first forward pass ("createBindGroup …
    // Required member is undefined"); the page builds the fused one for WebGPU.
    const file = 'tiny-qwen2moe.gguf';
    const reference = JSON.parse(readFileSync(join(FIXTURES, 'tiny-qwen2moe-reference.json'), 'utf8')) as { generations: Array<{ prompt: string; greedy_ids: number[]; greedy_text: string }> };
    const { prompt, greedy_ids: ids, greedy_text: text } = reference.generations[0]!;
    const { page, errors } = await openPlayground(browser, server.baseUrl);
    await expect.poll(() => page.locator('#target-webgpu').isDisabled(), WAIT).toBe(false);
    await page.getByText('In-page · WebGPU', { exact: true }).click();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('stories260k running in this page');
    await page.locator('#gguf-url').fill(`/ggufs/${file}`);
    await page.locator('#gguf-load-url').click();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain(`${file} running in this page · WebGPU`);
    expect(await greedyInPage(page, prompt, ids.length)).toBe(text);
    expect(errors).toEqual([]);
  });

  it('refuses a file that is not a GGUF by name, and a corrupt GGUF with the reason', async () => {
    const { page } = await openPlayground(browser, server.baseUrl);
    await page.locator('#gguf-file').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') });
    await expect.poll(() => page.locator('#gguf-note').textContent(), WAIT).toContain('notes.txt is not a .gguf file');
    await page.locator('#gguf-file').setInputFiles({ name: 'broken.gguf', mimeType: 'application/octet-stream', buffer: Buffer.from('GGUF but not really a model file') });
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toMatch(/failed to start: .*Cannot load the GGUF "broken.gguf"/);
  });
});
