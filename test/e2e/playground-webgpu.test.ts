/**
 * The playground's in-page engine on onnxruntime-web's WebGPU execution provider, in
 * headless Chromium on SwiftShader's software adapter: the reference greedy tokens, the
 * same seeded text as the server and as in-page WASM, streaming, and Stop.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { golden } from '../helpers/model.js';
import {
  askServer,
  closeContexts,
  expectStreamed,
  finishedText,
  launchChromium,
  openPlayground,
  pickEngine,
  seenTexts,
  setParam,
  shownRequestBody,
  WAIT,
  watchOutput,
  type PlaygroundServer,
  startPlaygroundServer,
  BROWSER_TEST_TIMEOUT,
} from './playground-harness.js';

let server: PlaygroundServer;
let browser: Browser;

/** Greedy tokens from the page's own engine for a backend, through the console API. */
function pageGreedyIds(page: Page, backend: 'wasm' | 'webgpu', promptTokenIds: number[], maxTokens: number): Promise<number[]> {
  return page.evaluate(
    async ({ backend, promptTokenIds, maxTokens }) => {
      const edgeLlm = (window as any).edgeLlm;
      const { engine } = await edgeLlm.app(backend);
      const ids: number[] = [];
      for await (const delta of engine.generate({ promptTokenIds, params: edgeLlm.samplingParams({ temperature: 0, maxTokens }) })) ids.push(...delta.tokenIds);
      return ids;
    },
    { backend, promptTokenIds, maxTokens },
  );
}

/** Counts GPU buffers mapped for reading (`mapAsync`): each is a GPU-to-CPU round trip. */
function countGpuReadbacks(): void {
  const page = window as unknown as { gpuReadbacks: number };
  page.gpuReadbacks = 0;
  const buffer = (globalThis as unknown as { GPUBuffer?: { prototype: { mapAsync: (...args: unknown[]) => Promise<void> } } }).GPUBuffer;
  if (!buffer) return;
  const mapAsync = buffer.prototype.mapAsync;
  buffer.prototype.mapAsync = function (this: unknown, ...args: unknown[]) {
    page.gpuReadbacks += 1;
    return mapAsync.apply(this, args);
  };
}

/**
 * KV caches in GPU buffers the page's WebGPU engine has not released, less the sequences its
 * prefix cache keeps on purpose (a finished sequence is kept for the next turn, in GPU buffers).
 */
function leakedGpuCaches(page: Page): Promise<number> {
  return page.evaluate(async () => {
    const app = await (window as any).edgeLlm.app('webgpu');
    return (app.gpuKv.liveCaches as number) - ((app.engine.stats().prefixCache?.keptSequences as number | undefined) ?? 0);
  });
}

describe('playground on WebGPU (SwiftShader)', { timeout: BROWSER_TEST_TIMEOUT }, () => {
  beforeAll(async () => {
    server = await startPlaygroundServer('webgpu');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });
  afterEach(closeContexts);

  it('offers WebGPU, runs the model on it with the KV cache on the GPU and reproduces the reference greedy tokens', async () => {
    const { page, errors } = await openPlayground(browser, server.baseUrl, undefined, countGpuReadbacks);
    const requests: string[] = [];
    page.on('request', (request) => requests.push(request.url()));
    await expect.poll(() => page.locator('#target-webgpu').isDisabled(), WAIT).toBe(false);
    await pickEngine(page, 'In-page · WebGPU');
    // The WebGPU build of onnxruntime-web (its own .wasm), not the WASM one.
    expect(requests.some((url) => url.endsWith('/playground/ort/ort-wasm-simd-threaded.asyncify.wasm'))).toBe(true);
    expect(requests.some((url) => url.endsWith('/playground/ort/ort-wasm-simd-threaded.wasm'))).toBe(false);
    const adapter = await page.evaluate(async () => {
      const found = await (navigator as any).gpu.requestAdapter();
      return { architecture: found.info.architecture as string, f16: found.features.has('shader-f16') as boolean };
    });
    expect(adapter).toEqual({ architecture: 'swiftshader', f16: false });

    // The KV cache stays in GPU buffers between steps, and none is left once the sequence ends.
    expect(await page.locator('#engine-status').textContent()).toContain('WebGPU · KV cache on the GPU');
    expect(await page.evaluate(async () => (await (window as any).edgeLlm.app('webgpu')).kvCacheOnGpu)).toBe(true);
    const readbacksBefore = await page.evaluate(() => (window as any).gpuReadbacks as number);
    expect(await pageGreedyIds(page, 'webgpu', golden.prompt_ids, golden.completion_ids.length)).toEqual(golden.completion_ids);
    // One GPU-to-CPU read per model call (prefill + 99 decode steps): the logits. The KV
    // cache never comes back (copying it would add two reads per layer and step).
    expect((await page.evaluate(() => (window as any).gpuReadbacks as number)) - readbacksBefore).toBe(golden.completion_ids.length);
    await expect.poll(() => leakedGpuCaches(page), WAIT).toBe(0);
    expect(errors).toEqual([]);
  });

  it('streams the server’s seeded text on WebGPU, the same as in-page WASM, and stops on Esc', async () => {
    const { page, errors } = await openPlayground(browser, server.baseUrl);
    await page.getByRole('tab', { name: 'Completions' }).click();
    await page.getByLabel('Prompt', { exact: true }).fill('Once upon a time, there was a little');
    await setParam(page, 'max_tokens', '40');
    await setParam(page, 'temperature', '0.9');
    await setParam(page, 'top_k', '40');
    await setParam(page, 'seed', '99');
    const body = await shownRequestBody(page);
    const direct = await askServer(server.baseUrl, '/v1/completions', body);
    const fromServer: string = direct.json.choices[0].text;
    expect(fromServer.length).toBeGreaterThan(20);

    const posts: string[] = [];
    page.on('request', (request) => request.method() === 'POST' && posts.push(request.url()));
    await pickEngine(page, 'In-page · WebGPU');
    await watchOutput(page);
    await page.getByRole('button', { name: 'Send' }).click();
    const onGpu = await finishedText(page);
    expect(onGpu).toBe(fromServer);
    expectStreamed(await seenTexts(page), onGpu);

    await pickEngine(page, 'In-page · WASM');
    await page.getByRole('button', { name: 'Send' }).click();
    expect(await finishedText(page)).toBe(fromServer);
    expect(posts).toEqual([]);

    // Stop ends a WebGPU generation early, and the engine takes the next request.
    await pickEngine(page, 'In-page · WebGPU');
    await setParam(page, 'max_tokens', '400');
    await page.getByLabel('ignore_eos').check();
    await page.keyboard.press('Control+Enter');
    await expect.poll(async () => ((await page.locator('.choice .output').textContent()) ?? '').length, WAIT).toBeGreaterThan(0);
    await page.keyboard.press('Escape');
    await page.locator('.choice .badge.stopped').waitFor(WAIT);
    expect(Number(await page.locator('#metric-tokens').textContent())).toBeLessThan(400);
    await setParam(page, 'max_tokens', '5');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.choice .badge.length').waitFor(WAIT);
    expect(await page.evaluate(async () => (await (window as any).edgeLlm.app('webgpu')).engine.stats().running)).toBe(0);
    await expect.poll(() => leakedGpuCaches(page), WAIT).toBe(0);
    expect(errors).toEqual([]);
  });

  it('gives the server’s n = 2 samples and beam search’s best beams on WebGPU (rows repacked on the GPU)', async () => {
    const { page, errors } = await openPlayground(browser, server.baseUrl);
    await page.getByRole('tab', { name: 'Completions' }).click();
    await page.getByLabel('Prompt', { exact: true }).fill('Once upon a time');
    await page.getByLabel('Stream tokens').uncheck();
    await setParam(page, 'max_tokens', '16');
    await setParam(page, 'temperature', '0.9');
    await setParam(page, 'seed', '3');
    await setParam(page, 'n', '2');
    await pickEngine(page, 'In-page · WebGPU');
    const texts = async () => {
      await page.getByRole('button', { name: 'Send' }).click();
      await expect.poll(() => page.locator('.choice .badge.length, .choice .badge.stop').count(), WAIT).toBe(2);
      return page.locator('.choice .output').allTextContents();
    };
    const sampled = await texts();
    const direct = await askServer(server.baseUrl, '/v1/completions', await shownRequestBody(page));
    expect(sampled).toEqual(direct.json.choices.map((c: { text: string }) => c.text));

    await setParam(page, 'temperature', '0');
    await setParam(page, 'top_k', '-1');
    await page.getByLabel('use_beam_search').check();
    const beams = await texts();
    const directBeams = await askServer(server.baseUrl, '/v1/completions', await shownRequestBody(page));
    expect(directBeams.status).toBe(200);
    expect(beams).toEqual(directBeams.json.choices.map((c: { text: string }) => c.text));
    await expect.poll(() => leakedGpuCaches(page), WAIT).toBe(0);
    expect(errors).toEqual([]);
  });
});
