/**
 * fp16 models in the page (?model=<folder with only an fp16 variant>): on WebGPU without
 * `shader-f16` (SwiftShader) the page refuses before downloading the graph, naming the
 * adapter's lack and what to use instead; in-page WASM runs the same fp16 graph (float16 KV
 * cache and logits) and gives the reference greedy tokens, as the Node engine does.
 */
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { referenceGreedy, removeFixtureFolders, writeFixtureFolder } from '../helpers/byom-fixtures.js';
import { collectGeneration } from '../helpers/model.js';
import { BROWSER_TEST_TIMEOUT, closeContexts, launchChromium, openPlayground, pickEngine, serveFolder, startPlaygroundServer, WAIT, type PlaygroundServer } from './playground-harness.js';

const PROMPT = [72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100];
const STEPS = 10;

let server: PlaygroundServer;
let browser: Browser;
let folder: string;
let nodeEngine: LocalEngine;

describe('playground with an fp16 model', { timeout: BROWSER_TEST_TIMEOUT }, () => {
  beforeAll(async () => {
    // Only an fp16 variant, computing with a float16 KV cache and float16 logits as fp16 exports do.
    folder = await writeFixtureFolder({ files: ['onnx/model_fp16.onnx'], layout: { kvType: 'float16', logitsType: 'float16' } });
    server = await startPlaygroundServer('fp16', (app) => serveFolder(app, '/models/fp16/', folder));
    [browser, nodeEngine] = await Promise.all([launchChromium(), createNodeEngine({ modelDir: folder })]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await nodeEngine?.dispose();
    await removeFixtureFolders();
  });
  afterEach(closeContexts);

  it('on WebGPU without shader-f16 refuses before the graph is downloaded, saying why and what to use instead', async () => {
    const { page, errors } = await openPlayground(browser, `${server.baseUrl}?model=/models/fp16/`);
    const requests: string[] = [];
    page.on('request', (request) => requests.push(`${request.method()} ${new URL(request.url()).pathname}`));
    // The premise: SwiftShader's adapter has no shader-f16.
    expect(await page.evaluate(async () => (await (navigator as any).gpu.requestAdapter()).features.has('shader-f16'))).toBe(false);
    await expect.poll(() => page.locator('#target-webgpu').isDisabled(), WAIT).toBe(false);
    await page.getByText('In-page · WebGPU', { exact: true }).click();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('shader-f16');
    expect(await page.locator('#engine-status').getAttribute('data-kind')).toBe('error');
    const message = (await page.locator('#engine-status').textContent()) ?? '';
    expect(message).toContain('This GPU adapter lacks the WebGPU feature "shader-f16", which the fp16 model onnx/model_fp16.onnx needs');
    expect(message).toContain('The folder has no float32 variant: use one that has onnx/model.onnx with dtype=fp32');
    expect(message).toContain('“In-page · WASM”');
    expect(message).not.toContain('onnxruntime-web said');
    expect(requests).toContain('HEAD /models/fp16/onnx/model_fp16.onnx');
    // Neither the graph nor onnxruntime's WebGPU .wasm nor the model's other files were fetched.
    expect(requests.filter((request) => request.startsWith('GET /models/fp16/'))).toEqual([]);
    expect(requests.some((request) => request.endsWith('.asyncify.wasm'))).toBe(false);
    expect(errors).toEqual([]);
  });

  it('runs the fp16 graph in-page on WASM with the reference greedy tokens, as the Node engine does', async () => {
    const { page, errors } = await openPlayground(browser, `${server.baseUrl}?model=/models/fp16/`);
    await pickEngine(page, 'In-page · WASM');
    expect(await page.locator('#engine-status').textContent()).toContain('fp16 running in this page');
    const inPage = await page.evaluate(
      async ({ prompt, steps }) => {
        const edgeLlm = (window as any).edgeLlm;
        const { engine } = await edgeLlm.app('wasm');
        const ids: number[] = [];
        const params = edgeLlm.samplingParams({ temperature: 0, maxTokens: steps, ignoreEos: true });
        for await (const delta of engine.generate({ promptTokenIds: prompt, params })) ids.push(...delta.tokenIds);
        return { ids, file: engine.loadReport.file as string, contract: engine.loadReport.contract as string };
      },
      { prompt: PROMPT, steps: STEPS },
    );
    expect(inPage.file).toBe('onnx/model_fp16.onnx');
    expect(inPage.contract).toContain('KV float16, logits float16');
    expect(inPage.ids).toEqual(referenceGreedy(PROMPT, STEPS).tokenIds);
    const onNode = await collectGeneration(nodeEngine, PROMPT, { temperature: 0, maxTokens: STEPS, ignoreEos: true });
    expect(inPage.ids).toEqual(onNode.tokenIds);
    expect(errors).toEqual([]);
  });
});
