/**
 * The web-llm engine of the browser home, in headless Chromium on SwiftShader's software
 * WebGPU adapter, with the committed MLC model library and a seeded random-weight folder
 * written for it (test/helpers/mlc-fixtures.ts): the playground's web-llm panel (prebuilt
 * list, the shader-f16 refusal, an unreachable hub, a custom folder loaded with download
 * progress in MB of the total, the cached list and Delete, offline), both APIs in the page
 * on it, greedy and the same across a reload that loads everything from Cache Storage, the
 * MindIE stream framed as the server frames it, logprobs against web-llm's own, refusals
 * naming the field, and the message of a browser without an adapter. SwiftShader decodes a token of this 0.5B model in 10–30 s,
 * (minutes under load), so prompts are one token, requests 2 tokens, and the browser starts once.
 */
import { readFile } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_WEBGPU_MESSAGE } from '../../src/runtime/browser/webllm.js';
import { MLC_LIBRARY_PATH, writeRandomMlcFolder, type MlcFolder } from '../helpers/mlc-fixtures.js';
import { launchChromium, OUTPUT_DIR, seenStatuses, serveFolder, startPlaygroundServer, WAIT, watchStatus, type PlaygroundServer } from './playground-harness.js';
import { basename, dirname } from 'node:path';

let server: PlaygroundServer;
let browser: Browser;
let folder: MlcFolder;

const LIBRARY_NAME = basename(MLC_LIBRARY_PATH);
/** The folder's name is the model id the panel gives a custom URL. */
const MODEL_ID = 'qwen2-random';
/** One token of the fixture's tokenizer: SwiftShader prefills at well under a token a second. */
const PROMPT = 'a';
/** A SwiftShader load of the 0.5B library: 25 s on an idle machine, minutes on a loaded one. */
const LOAD_WAIT = { timeout: 1_200_000, interval: 1000 };

/** The model folder and library as the page is given them (absolute, so the panel and the console name the same model). */
const modelUrl = () => new URL(`mlc/${MODEL_ID}/`, server.baseUrl).href;
const libUrl = () => new URL(`mlc/lib/${LIBRARY_NAME}`, server.baseUrl).href;

interface Answer {
  status: number;
  text: string;
}

/** Sends the page's web-llm app requests (loading it if the page has not), as the page's own fetch would. */
async function inPage(page: Page, requests: Array<{ path: string; body: Record<string, unknown> }>): Promise<Answer[]> {
  await page.waitForFunction(() => (window as any).edgeLlm !== undefined);
  return page.evaluate(
    async ({ requests, modelUrl, modelLibUrl, modelId }) => {
      const { app } = await (window as any).edgeLlm.webllm({ modelUrl, modelLibUrl, modelId });
      const answers = [];
      for (const { path, body } of requests) {
        const response = await app.fetch(
          new Request(new URL(path, location.href), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
        );
        answers.push({ status: response.status, text: await response.text() });
      }
      return answers;
    },
    { requests, modelUrl: modelUrl(), modelLibUrl: libUrl(), modelId: MODEL_ID },
  );
}

/** web-llm's own completions API on the page's loaded model: what it reports as logprobs. */
async function webLlmOwnLogprobs(page: Page, temperature: number): Promise<{ token: string; logprob: number; top_logprobs: Array<{ token: string; logprob: number }> }> {
  return page.evaluate(
    async ({ modelUrl, modelLibUrl, modelId, prompt, temperature }) => {
      const { engine } = await (window as any).edgeLlm.webllm({ modelUrl, modelLibUrl, modelId });
      // The MLCEngine the engine steps (private there); its public completions API.
      const reply = await engine.mlc.completions.create({ model: modelId, prompt, max_tokens: 1, temperature, logprobs: true, top_logprobs: 2, seed: 1 });
      return reply.choices[0].logprobs.content[0];
    },
    { modelUrl: modelUrl(), modelLibUrl: libUrl(), modelId: MODEL_ID, prompt: PROMPT, temperature },
  );
}

/** An SSE body's events with every string and number replaced by its type: the framing without the text. */
function framing(body: string): unknown[] {
  const shape = (value: unknown): unknown =>
    Array.isArray(value) ? value.map(shape) : value !== null && typeof value === 'object' ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shape(v)])) : typeof value;
  return body
    .split('\n\n')
    .filter((event) => event.trim() !== '')
    .map((event) => {
      expect(event.startsWith('data: ')).toBe(true);
      const payload = event.slice('data: '.length);
      return payload === '[DONE]' ? payload : shape(JSON.parse(payload));
    });
}

/** The text a MindIE stream generated (its events' token texts). */
function streamedText(body: string): string {
  return body
    .split('\n\n')
    .filter((event) => event.startsWith('data: {'))
    .map((event) => (JSON.parse(event.slice('data: '.length)).token?.text ?? JSON.parse(event.slice('data: '.length)).text?.join('') ?? '') as string)
    .join('');
}

const statusLine = (page: Page) => page.locator('#engine-status').textContent();

/** Where the long test is (a timeout then says how far it got). */
const stage = (what: string) => console.log(`[web-llm e2e] ${new Date().toISOString()} ${what}`);

const megabytes = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

const GREEDY_COMPLETION = { model: MODEL_ID, prompt: PROMPT, max_tokens: 2, temperature: 0, ignore_eos: true, logprobs: 2 };
const GREEDY_GENERATE = { prompt: PROMPT, max_tokens: 2, temperature: 0, ignore_eos: true };
const REQUESTS = [
  // With logprobs: web-llm runs it at temperature 1 with an argmax top_p (generation-config.ts).
  { path: '/v1/completions', body: GREEDY_COMPLETION },
  { path: '/generate', body: { ...GREEDY_GENERATE, stream: true } },
  // Refused before any work: web-llm has no top-k, nor regular expressions.
  { path: '/v1/completions', body: { ...GREEDY_COMPLETION, temperature: 0.8, top_k: 5 } },
  { path: '/v1/completions', body: { ...GREEDY_COMPLETION, guided_regex: '[a-z]+' } },
];

/** The prebuilt models the panel lists, as its <select> shows them. */
const panelOptions = (page: Page) =>
  page.locator('#webllm-model option').evaluateAll((options) => (options as HTMLOptionElement[]).map((o) => ({ value: o.value, text: o.textContent ?? '', disabled: o.disabled })));

describe('web-llm in the page (SwiftShader)', { timeout: 2_400_000 }, () => {
  beforeAll(async () => {
    [folder] = await Promise.all([writeRandomMlcFolder(`${OUTPUT_DIR}/mlc-random`)]);
    server = await startPlaygroundServer('webllm', (app) => {
      serveFolder(app, `/mlc/${MODEL_ID}/resolve/main/`, folder.dir);
      serveFolder(app, '/mlc/lib/', dirname(MLC_LIBRARY_PATH));
    });
    browser = await launchChromium();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('is picked and loaded in the playground’s panel, serves /v1/completions and /generate, the same after a reload from the cache, and its cached model is deleted', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const fetched: string[] = [];
    page.on('request', (request) => fetched.push(request.url()));
    // No internet here: the hub is unreachable, at once rather than after a timeout.
    await context.route((url) => !url.href.startsWith(server.baseUrl), (route) => route.abort('internetdisconnected'));
    await page.goto(server.baseUrl);
    await watchStatus(page);

    // The panel: web-llm's prebuilt list (it ships with web-llm), f16 builds marked.
    await expect.poll(() => page.locator('#target-webllm').isDisabled(), WAIT).toBe(false);
    await page.getByText('In-page · web-llm', { exact: true }).click();
    await expect.poll(async () => (await panelOptions(page)).length, WAIT).toBeGreaterThan(10);
    const options = await panelOptions(page);
    expect(options.at(-1)).toMatchObject({ value: 'custom', disabled: false });
    const f16 = options.find((o) => o.value === 'Qwen2.5-0.5B-Instruct-q4f16_1-MLC');
    expect(f16?.text).toContain('needs shader-f16');
    expect(options.find((o) => o.value === 'Qwen2.5-0.5B-Instruct-q4f32_1-MLC')?.text).not.toContain('shader-f16');
    expect(options.every((o) => !o.disabled)).toBe(true);

    // An f16 library on an adapter without shader-f16 (SwiftShader has none): refused before any download.
    await page.selectOption('#webllm-model', 'Qwen2.5-0.5B-Instruct-q4f16_1-MLC');
    await expect.poll(() => statusLine(page), WAIT).toContain('lacks the WebGPU feature "shader-f16"');
    expect(await statusLine(page)).toContain('Nothing of the model was downloaded');
    expect(fetched.filter((url) => url.includes('q4f16'))).toEqual([]);
    // A prebuilt model while the hub cannot be reached: the status says what could not be read and what still loads.
    await page.selectOption('#webllm-model', 'Qwen2.5-0.5B-Instruct-q4f32_1-MLC');
    await expect.poll(() => statusLine(page), WAIT).toContain('Cannot read the model folder https://huggingface.co/mlc-ai/Qwen2.5-0.5B-Instruct-q4f32_1-MLC');
    expect(await statusLine(page)).toContain('only models web-llm has cached');
    expect(await page.locator('#engine-status').getAttribute('data-kind')).toBe('error');

    // A custom folder + library URL: loads with progress in MB of the weights' total.
    await page.selectOption('#webllm-model', 'custom');
    await expect.poll(() => statusLine(page), WAIT).toContain('Give the model folder’s URL and its model library’s URL.');
    await page.fill('#webllm-model-url', modelUrl());
    await page.fill('#webllm-lib-url', libUrl());
    await page.locator('#webllm-lib-url').press('Tab');
    stage('custom folder picked: loading');
    await expect.poll(() => statusLine(page), LOAD_WAIT).toContain(`${MODEL_ID} running in this page · web-llm · WebGPU`);
    const ndarrayCache = JSON.parse(await readFile(`${folder.dir}/ndarray-cache.json`, 'utf8')) as { records: Array<{ nbytes: number }> };
    const total = megabytes(ndarrayCache.records.reduce((sum, shard) => sum + shard.nbytes, 0));
    const statuses = await seenStatuses(page);
    expect(statuses.some((t) => t.includes(`downloading the weights: 0.0 of ${total} MB (0%)`)), statuses.join('\n')).toBe(true);
    expect(statuses.some((t) => t.includes(`downloading the weights: ${total} of ${total} MB (100%)`)), statuses.join('\n')).toBe(true);
    const shards = ndarrayCache.records.length;
    expect(statuses.some((t) => t.includes(`moving the weights onto the GPU: shard ${shards} of ${shards} (${total} MB)`)), statuses.join('\n')).toBe(true);
    expect(fetched.some((url) => url === `${modelUrl()}resolve/main/params_shard_0.bin`)).toBe(true);
    // The cache list names it, with Delete.
    await expect.poll(() => page.locator('#webllm-cached').textContent(), WAIT).toContain(MODEL_ID);
    await expect(page.locator('#webllm-cached').getByRole('button', { name: 'Delete' }).count()).resolves.toBe(1);

    stage('loaded; requests');
    // The same app, from the console: both APIs.
    const [completion, streamed, topK, regex] = await inPage(page, REQUESTS);
    expect(completion.status, completion.text).toBe(200);
    const completionJson = JSON.parse(completion.text);
    expect(completionJson.usage.completion_tokens).toBe(2);
    expect(completionJson.choices[0].finish_reason).toBe('length');
    expect(completionJson.model).toBe(MODEL_ID);

    // The stream is framed as the server frames the same request (MindIE events, one per token).
    expect(streamed.status).toBe(200);
    const fromServer = await fetch(new URL('/generate', server.baseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...GREEDY_GENERATE, stream: true }),
    });
    expect(framing(streamed.text)).toEqual(framing(await fromServer.text()));
    // Greedy with logprobs (temperature 1, argmax top_p) picked the tokens greedy without them (temperature 0) did.
    expect(completionJson.choices[0].text).toBe(streamedText(streamed.text));

    // logprobs: web-llm's own at temperature 0 are one-hot (softmax at 1e-6), which is why
    // greedy runs at temperature 1; there its top tokens and logprobs are ours.
    const { logprobs } = completionJson.choices[0];
    stage('requests answered; web-llm’s own logprobs');
    const ownGreedy = await webLlmOwnLogprobs(page, 0);
    expect(ownGreedy.token).toBe(logprobs.tokens[0]);
    expect(ownGreedy.logprob).toBeGreaterThan(-1e-6);
    expect(ownGreedy.top_logprobs[1].logprob).toBeLessThan(-1000);
    expect(logprobs.token_logprobs[0]).toBeLessThan(-0.01);
    const ownAtOne = await webLlmOwnLogprobs(page, 1);
    // Best first (an object's integer-like keys would come first whatever their order).
    const ours = Object.entries(logprobs.top_logprobs[0] as Record<string, number>).sort((a, b) => b[1] - a[1]);
    expect(ours).toHaveLength(2);
    expect(ours[0]).toEqual([logprobs.tokens[0], logprobs.token_logprobs[0]]);
    ownAtOne.top_logprobs.forEach((top, i) => {
      expect(top.token).toBe(ours[i][0]);
      expect(top.logprob).toBeCloseTo(ours[i][1], 4);
    });

    expect(topK.status).toBe(400);
    expect(JSON.parse(topK.text)).toMatchObject({ object: 'error', param: 'top_k', code: 400 });
    expect(regex.status).toBe(400);
    expect(JSON.parse(regex.text)).toMatchObject({ param: 'guided_regex', code: 400 });

    // A reload: the page remembers web-llm and the folder; web-llm loads weights and library from Cache Storage.
    fetched.length = 0;
    stage('reload');
    await page.reload();
    // Both APIs again (the check): the completion and the streamed /generate.
    const again = await inPage(page, REQUESTS.slice(0, 2));
    stage('answered after the reload');
    expect(again[0].status).toBe(200);
    expect(again[1].status).toBe(200);
    expect(streamedText(again[1].text)).toBe(streamedText(streamed.text));
    const againChoice = JSON.parse(again[0].text).choices[0];
    expect(againChoice.text).toBe(completionJson.choices[0].text);
    expect(againChoice.logprobs.tokens).toEqual(logprobs.tokens);
    againChoice.logprobs.token_logprobs.forEach((value: number, i: number) => expect(value).toBeCloseTo(logprobs.token_logprobs[i], 5));
    // Only the page's own small JSON reads revalidate (browser-cache.ts: ETag, 304); the
    // weights and the library come from web-llm's Cache Storage.
    expect(fetched.filter((url) => url.includes('/mlc/') && !url.endsWith('.json'))).toEqual([]);
    expect(fetched.filter((url) => !url.startsWith(server.baseUrl))).toEqual([]);

    // Delete: the model leaves web-llm's caches, the page's copies of its small files, and the list.
    await expect.poll(() => page.locator('#webllm-cached').textContent(), WAIT).toContain(MODEL_ID);
    await page.locator('#webllm-cached').getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => page.locator('#webllm-cached').textContent(), WAIT).toBe('nothing yet');
    const left = await page.evaluate(async (prefix) => {
      const urls: string[] = [];
      for (const name of await caches.keys()) {
        for (const request of await (await caches.open(name)).keys()) if (request.url.startsWith(prefix)) urls.push(request.url);
      }
      return urls;
    }, new URL('mlc/', server.baseUrl).href);
    expect(left).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('offline, offers only cached prebuilt models and says so', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(server.baseUrl);
    await expect.poll(() => page.locator('#target-webllm').isDisabled(), WAIT).toBe(false);
    await page.getByText('In-page · web-llm', { exact: true }).click();
    await expect.poll(async () => (await panelOptions(page)).length, WAIT).toBeGreaterThan(10);
    // The browser goes offline with the panel open.
    await context.setOffline(true);
    await expect.poll(async () => (await panelOptions(page)).filter((o) => o.disabled).length, WAIT).toBeGreaterThan(10);
    const options = await panelOptions(page);
    // Nothing is cached in a fresh context: every prebuilt model is disabled, the custom choice is not.
    expect(options.filter((o) => o.value !== 'custom').every((o) => o.disabled && o.text.includes('offline: not cached'))).toBe(true);
    expect(options.at(-1)).toMatchObject({ value: 'custom', disabled: false });
    expect(await page.locator('#webllm-note').textContent()).toContain('Offline: only the models cached by web-llm');
    await context.setOffline(false);
    await expect.poll(async () => (await panelOptions(page)).every((o) => !o.disabled), WAIT).toBe(true);
    await context.close();
  });

  it('says why when the browser has no WebGPU adapter, and the page offers web-llm disabled with that reason', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.addInitScript(() => {
      const gpu = (navigator as any).gpu;
      if (gpu) gpu.requestAdapter = async () => null;
    });
    await page.goto(server.baseUrl);
    await page.waitForFunction(() => (window as any).edgeLlm !== undefined);
    const message = await page.evaluate(async ({ modelUrl, modelLibUrl }) => {
      try {
        await (window as any).edgeLlm.webllm({ modelUrl, modelLibUrl });
        return 'loaded';
      } catch (error) {
        return (error as Error).message;
      }
    }, { modelUrl: modelUrl(), modelLibUrl: libUrl() });
    expect(message).toBe(NO_WEBGPU_MESSAGE);
    await expect.poll(() => page.locator('label[for="target-webllm"]').getAttribute('title'), WAIT).toBe(NO_WEBGPU_MESSAGE);
    expect(await page.locator('#target-webllm').isDisabled()).toBe(true);
    await context.close();
  });
});
