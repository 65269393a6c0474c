/**
 * The web-llm engine of the browser home, in headless Chromium on SwiftShader's software
 * WebGPU adapter, with the committed MLC model library and a seeded random-weight folder
 * written for it (test/helpers/mlc-fixtures.ts): both APIs in the page on it, greedy and
 * the same across a reload that loads everything from Cache Storage, the MindIE stream
 * framed as the server frames it, refusals naming the field, and the message of a
 * browser without an adapter. SwiftShader decodes a token of this 0.5B model in 10–30 s,
 * (minutes under load), so prompts are one token, requests 2 tokens, and the browser starts once.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_WEBGPU_MESSAGE } from '../../src/runtime/browser-webllm.js';
import { MLC_LIBRARY_PATH, writeRandomMlcFolder, type MlcFolder } from '../helpers/mlc-fixtures.js';
import { launchChromium, OUTPUT_DIR, serveFolder, startPlaygroundServer, type PlaygroundServer } from './playground-harness.js';
import { basename, dirname } from 'node:path';

let server: PlaygroundServer;
let browser: Browser;
let folder: MlcFolder;

const LIBRARY_NAME = basename(MLC_LIBRARY_PATH);
/** One token of the fixture's tokenizer: SwiftShader prefills at well under a token a second. */
const PROMPT = 'a';

interface Answer {
  status: number;
  text: string;
}

/** Loads the web-llm app in the page (if not yet) and sends it requests, as the page's own fetch would. */
async function inPage(page: Page, requests: Array<{ path: string; body: Record<string, unknown> }>): Promise<{ answers: Answer[]; progress: number[] }> {
  await page.waitForFunction(() => (window as any).edgeLlm !== undefined);
  return page.evaluate(
    async ({ requests, library }) => {
      const progress: number[] = [];
      const { app } = await (window as any).edgeLlm.webllm({
        modelUrl: new URL('mlc/model/', location.href).href,
        modelLibUrl: new URL(`mlc/lib/${library}`, location.href).href,
        modelId: 'qwen2-random',
        onProgress: (report: { progress: number }) => progress.push(report.progress),
      });
      const answers = [];
      for (const { path, body } of requests) {
        const response = await app.fetch(
          new Request(new URL(path, location.href), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
        );
        answers.push({ status: response.status, text: await response.text() });
      }
      return { answers, progress };
    },
    { requests, library: LIBRARY_NAME },
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

const GREEDY_COMPLETION = { model: 'qwen2-random', prompt: PROMPT, max_tokens: 2, temperature: 0, ignore_eos: true };
const GREEDY_GENERATE = { prompt: PROMPT, max_tokens: 2, temperature: 0, ignore_eos: true };
const REQUESTS = [
  { path: '/v1/completions', body: GREEDY_COMPLETION },
  { path: '/generate', body: { ...GREEDY_GENERATE, stream: true } },
  // Refused before any work: web-llm has no top-k, nor regular expressions.
  { path: '/v1/completions', body: { ...GREEDY_COMPLETION, temperature: 0.8, top_k: 5 } },
  { path: '/v1/completions', body: { ...GREEDY_COMPLETION, guided_regex: '[a-z]+' } },
];

describe('web-llm in the page (SwiftShader)', { timeout: 1_800_000 }, () => {
  beforeAll(async () => {
    [folder] = await Promise.all([writeRandomMlcFolder(`${OUTPUT_DIR}/mlc-random`)]);
    server = await startPlaygroundServer('webllm', (app) => {
      serveFolder(app, '/mlc/model/resolve/main/', folder.dir);
      serveFolder(app, '/mlc/lib/', dirname(MLC_LIBRARY_PATH));
    });
    browser = await launchChromium();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('serves /v1/completions and /generate on the random folder, the same after a reload from the cache, with the server’s framing and named refusals', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const fetched: string[] = [];
    page.on('request', (request) => fetched.push(request.url()));
    await page.goto(server.baseUrl);

    const first = await inPage(page, REQUESTS);
    const [completion, streamed, topK, regex] = first.answers;
    expect(completion.status).toBe(200);
    const completionJson = JSON.parse(completion.text);
    expect(completionJson.usage.completion_tokens).toBe(2);
    expect(completionJson.choices[0].finish_reason).toBe('length');
    expect(completionJson.model).toBe('qwen2-random');
    // Real totals: progress rises to 1 over the folder's bytes.
    expect(first.progress.at(-1)).toBe(1);
    expect(fetched.some((url) => url.endsWith('/mlc/model/resolve/main/params_shard_0.bin'))).toBe(true);

    // The stream is framed as the server frames the same request (MindIE events, one per token).
    expect(streamed.status).toBe(200);
    const fromServer = await fetch(new URL('/generate', server.baseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...GREEDY_GENERATE, stream: true }),
    });
    expect(framing(streamed.text)).toEqual(framing(await fromServer.text()));

    expect(topK.status).toBe(400);
    expect(JSON.parse(topK.text)).toMatchObject({ object: 'error', param: 'top_k', code: 400 });
    expect(regex.status).toBe(400);
    expect(JSON.parse(regex.text)).toMatchObject({ param: 'guided_regex', code: 400 });

    // A reload: web-llm loads weights and library from Cache Storage, nothing from elsewhere.
    fetched.length = 0;
    await page.reload();
    const again = await inPage(page, REQUESTS.slice(0, 2));
    expect(again.answers[0].status).toBe(200);
    expect(JSON.parse(again.answers[0].text).choices[0].text).toBe(completionJson.choices[0].text);
    expect(again.answers[1].text).toBe(streamed.text);
    // Only the page's own small JSON reads revalidate (browser-cache.ts: ETag, 304); the
    // weights, their index and the library come from web-llm's Cache Storage.
    expect(fetched.filter((url) => url.includes('/mlc/') && !url.endsWith('.json'))).toEqual([]);
    expect(fetched.some((url) => url.endsWith('/ndarray-cache.json'))).toBe(false);
    expect(fetched.filter((url) => !url.startsWith(server.baseUrl))).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('says why when the browser has no WebGPU adapter', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.addInitScript(() => {
      const gpu = (navigator as any).gpu;
      if (gpu) gpu.requestAdapter = async () => null;
    });
    await page.goto(server.baseUrl);
    await page.waitForFunction(() => (window as any).edgeLlm !== undefined);
    const message = await page.evaluate(async (library) => {
      try {
        await (window as any).edgeLlm.webllm({ modelUrl: new URL('mlc/model/', location.href).href, modelLibUrl: new URL(`mlc/lib/${library}`, location.href).href });
        return 'loaded';
      } catch (error) {
        return (error as Error).message;
      }
    }, LIBRARY_NAME);
    expect(message).toBe(NO_WEBGPU_MESSAGE);
    await context.close();
  });
});
