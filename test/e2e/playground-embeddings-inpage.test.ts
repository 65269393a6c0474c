/**
 * Embeddings in the page (Debian's Chromium, driven by playwright-core): an embedding model
 * folder named by the page's URL (`?model=`) loaded by the in-page WASM engine and served by
 * the page's own app, with no server doing the inference — the server here runs a generation
 * model (stories260k), which answers /v1/embeddings with a 400, so every vector below was
 * computed in the page. Checked against sentence-transformers' `encode` on the same weights
 * (each fixture's reference.json): the encoder (bert-wordpiece: mean pooling, Normalize) and
 * the decoder (qwen3-decoder: last-token pooling), alone and batched; the Embeddings tab on the
 * in-page engine; and the openai client's `embeddings.create` (openai-node bundled for the
 * browser, run in the page with the in-page app's fetch). A GGUF made for llama.cpp's
 * `--embedding` (Qwen3-Embedding style: the header's pooling type) picked in the page, built
 * in the page's GGUF worker, checked against llama-server --embedding and
 * sentence-transformers on the same weights (gguf/reference.json); a BERT GGUF refused with
 * the reason, as the Node server refuses it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/model.js';
import {
  BROWSER_TEST_TIMEOUT,
  CHROMIUM_MISSING,
  closeContexts,
  launchChromium,
  openPlayground,
  pickEngine,
  serveFolder,
  startPlaygroundServer,
  WAIT,
  type PlaygroundServer,
} from './playground-harness.js';
import { cosine } from '../helpers/vectors.js';

const FIXTURES = join(REPO_ROOT, 'test/fixtures/embeddings');

interface Reference {
  texts: string[];
  solo: number[][];
  batched: number[][];
}

const ggufReference = JSON.parse(readFileSync(join(FIXTURES, 'gguf', 'reference.json'), 'utf8')) as Record<string, { texts: string[]; llama_server: number[][]; sentence_transformers: number[][] }>;

const reference = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name, 'reference.json'), 'utf8')) as Reference;


function expectVectors(got: number[][], want: number[][], what: string): void {
  expect(got.length, what).toBe(want.length);
  got.forEach((vector, i) => {
    expect(vector.length, `${what} ${i}: dimensions`).toBe(want[i]!.length);
    expect(cosine(vector, want[i]!), `${what} ${i}: cosine to sentence-transformers`).toBeGreaterThanOrEqual(0.9999);
    expect(Math.hypot(...vector), `${what} ${i}: norm (Normalize module)`).toBeCloseTo(1, 4);
  });
}

/** POST /v1/embeddings to the page's in-page WASM app, from inside the page; the vectors in input order. */
async function embedInPage(page: Page, model: string, input: string | string[], backend: 'wasm' | 'webgpu' = 'wasm'): Promise<{ status: number; vectors: number[][]; usage: unknown }> {
  return page.evaluate(
    async ({ model, input, backend }) => {
      const app = await (window as unknown as { edgeLlm: { app(backend: string): Promise<{ kind: string; app: { fetch(r: Request): Promise<Response> } }> | null } }).edgeLlm.app(backend);
      if (!app) throw new Error(`the in-page ${backend} engine is not started`);
      if (app.kind !== 'embeddings') throw new Error(`the in-page app is a ${app.kind} app`);
      const response = await app.app.fetch(
        new Request(new URL('v1/embeddings', document.baseURI), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, input, encoding_format: 'float' }) }),
      );
      const body = (await response.json()) as { data: Array<{ index: number; embedding: number[] }>; usage: unknown };
      return { status: response.status, vectors: [...body.data].sort((a, b) => a.index - b.index).map((item) => item.embedding), usage: body.usage };
    },
    { model, input, backend },
  );
}

/** openai-node as a browser script: `window.OpenAI`. */
async function openAiBrowserBundle(): Promise<string> {
  const result = await build({
    stdin: { contents: "import OpenAI from 'openai'; globalThis.OpenAI = OpenAI;", resolveDir: REPO_ROOT, loader: 'ts' },
    bundle: true,
    format: 'iife',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

let server: PlaygroundServer;
let browser: Browser;
let openAiScript: string;

it('has Chromium to run the playground in', () => {
  if (CHROMIUM_MISSING) throw new Error(CHROMIUM_MISSING);
});

describe('embeddings in the page (in-page WASM engine)', { timeout: BROWSER_TEST_TIMEOUT }, () => {
  beforeAll(async () => {
    [server, openAiScript] = await Promise.all([
      startPlaygroundServer('playground-embeddings-inpage', (app) => {
        for (const name of ['bert-wordpiece', 'qwen3-decoder']) serveFolder(app, `/models/${name}/`, join(FIXTURES, name));
      }),
      openAiBrowserBundle(),
    ]);
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  afterEach(closeContexts);

  /** The page with an embedding folder as its in-page model, the WASM engine started on it. */
  async function pageOn(name: string, engine: 'In-page · WASM' | 'In-page · WebGPU' = 'In-page · WASM'): Promise<{ page: Page; errors: string[] }> {
    const { page, errors } = await openPlayground(browser, `${server.baseUrl}?model=models/${name}/`);
    if (engine === 'In-page · WebGPU') await expect.poll(() => page.locator('#target-webgpu').isDisabled(), WAIT).toBe(false);
    await pickEngine(page, engine);
    expect(await page.locator('#engine-status').textContent()).toContain(`${name} running in this page`);
    return { page, errors };
  }

  it('serves the encoder fixture in the page: the vectors of sentence-transformers, alone and batched; the server itself refuses embeddings', async () => {
    const ref = reference('bert-wordpiece');
    const { page, errors } = await pageOn('bert-wordpiece');
    // The page's server runs a generation model: whatever /v1/embeddings answers below, it came from the page.
    const onServer = await fetch(new URL('v1/embeddings', server.baseUrl), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'stories260k', input: 'x' }) });
    expect(onServer.status).toBe(400);

    const solo: number[][] = [];
    for (const text of ref.texts) {
      const answer = await embedInPage(page, 'bert-wordpiece', text);
      expect(answer.status).toBe(200);
      solo.push(answer.vectors[0]!);
    }
    expectVectors(solo, ref.solo, 'alone');
    const batched = await embedInPage(page, 'bert-wordpiece', ref.texts);
    expect(batched.status).toBe(200);
    expectVectors(batched.vectors, ref.batched, 'batched');
    expect(errors).toEqual([]);
  });

  it('serves the decoder fixture (last-token pooling) in the page: the vectors of sentence-transformers, alone and batched', async () => {
    const ref = reference('qwen3-decoder');
    const { page, errors } = await pageOn('qwen3-decoder');
    const solo: number[][] = [];
    for (const text of ref.texts) solo.push((await embedInPage(page, 'qwen3-decoder', text)).vectors[0]!);
    expectVectors(solo, ref.solo, 'alone');
    expectVectors((await embedInPage(page, 'qwen3-decoder', ref.texts)).vectors, ref.batched, 'batched');
    expect(errors).toEqual([]);
  });

  it('answers the openai client’s embeddings.create in the page, float and base64, through the in-page app’s fetch', async () => {
    const ref = reference('bert-wordpiece');
    const { page, errors } = await pageOn('bert-wordpiece');
    await page.addScriptTag({ content: openAiScript });
    const answers = await page.evaluate(async (texts) => {
      const inPage = await (window as unknown as { edgeLlm: { app(backend: string): Promise<{ app: { fetch(r: Request): Promise<Response> } }> } }).edgeLlm.app('wasm');
      const OpenAI = (window as unknown as { OpenAI: new (options: Record<string, unknown>) => any }).OpenAI;
      const client = new OpenAI({
        apiKey: 'unused',
        baseURL: new URL('v1', document.baseURI).href,
        dangerouslyAllowBrowser: true,
        fetch: (url: string | URL | Request, init?: RequestInit) => inPage.app.fetch(new Request(url, init)),
      });
      const float = await client.embeddings.create({ model: 'bert-wordpiece', input: texts, encoding_format: 'float' });
      // Without encoding_format the client asks for base64 and decodes it itself.
      const base64 = await client.embeddings.create({ model: 'bert-wordpiece', input: texts.slice(0, 3) });
      let refused = '';
      try {
        await client.embeddings.create({ model: 'bert-wordpiece', input: 'x', dimensions: 8 });
      } catch (error) {
        refused = `${(error as { status?: number }).status} ${(error as Error).message}`;
      }
      return { float, base64, refused };
    }, ref.texts);
    expect(answers.float.model).toBe('bert-wordpiece');
    expect(answers.float.object).toBe('list');
    expect(answers.float.usage.prompt_tokens).toBeGreaterThan(ref.texts.length);
    expectVectors(answers.float.data.map((item: { embedding: number[] }) => item.embedding), ref.batched, 'openai float');
    expectVectors(answers.base64.data.map((item: { embedding: number[] }) => item.embedding), ref.batched.slice(0, 3), 'openai base64');
    // A model not trained for `dimensions` is refused in the API's shape, as the server refuses it.
    expect(answers.refused).toMatch(/^400 .*matryoshka/);
    expect(errors).toEqual([]);
  });

  it('serves a GGUF made for llama.cpp’s --embedding, picked in the page: the vectors of llama-server and sentence-transformers, alone and batched', async () => {
    const file = 'qwen3-embedding-f32.gguf';
    const ref = ggufReference[file]!;
    const { page, errors } = await openPlayground(browser, server.baseUrl);
    await page.locator('#gguf-file').setInputFiles(join(FIXTURES, 'gguf', file));
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain(`${file} running in this page · WebAssembly`);
    const report = (await page.locator('#gguf-report-text').textContent()) ?? '';
    expect(report).toMatch(/qwen3\.pooling_type LAST from the header/);
    const check = (vectors: number[][]) =>
      vectors.forEach((vector, i) => {
        expect(vector.length).toBe(ref.llama_server[i]!.length);
        expect(cosine(vector, ref.llama_server[i]!), `llama-server, input ${i}`).toBeGreaterThanOrEqual(0.9999);
        expect(cosine(vector, ref.sentence_transformers[i]!), `sentence-transformers, input ${i}`).toBeGreaterThanOrEqual(0.9999);
      });
    const alone: number[][] = [];
    for (const text of ref.texts) alone.push((await embedInPage(page, file, text)).vectors[0]!);
    check(alone);
    const batched = await embedInPage(page, file, ref.texts);
    expect(batched.vectors.length).toBe(ref.texts.length);
    check(batched.vectors);
    expect(errors).toEqual([]);
  });

  it('refuses a BERT GGUF in the page with the reason, as the server does', async () => {
    const { page } = await openPlayground(browser, server.baseUrl);
    await page.locator('#gguf-file').setInputFiles(join(FIXTURES, 'gguf', 'bert-wordpiece-f32.gguf'));
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toMatch(/failed to start: .*bert-wordpiece-f32\.gguf.*encoder/);
  });

  it('serves the encoder fixture on the page’s WebGPU engine (SwiftShader) with sentence-transformers’ vectors', async () => {
    const ref = reference('bert-wordpiece');
    const { page, errors } = await pageOn('bert-wordpiece', 'In-page · WebGPU');
    expect(await page.locator('#engine-status').textContent()).toContain('WebGPU');
    const batched = await embedInPage(page, 'bert-wordpiece', ref.texts, 'webgpu');
    expect(batched.status).toBe(200);
    expectVectors(batched.vectors, ref.batched, 'batched on WebGPU');
    expect(errors).toEqual([]);
  });

  it('the Embeddings tab on the in-page engine shows sentence-transformers’ vectors and their similarity', async () => {
    const ref = reference('bert-wordpiece');
    const { page, errors } = await pageOn('bert-wordpiece');
    await page.getByRole('tab', { name: 'Embeddings' }).click();
    await page.locator('#embeddings-inputs').fill(ref.texts.slice(0, 4).join('\n'));
    await page.locator('#embed').click();
    await expect.poll(() => page.locator('#embeddings-status').textContent(), WAIT).toMatch(/^4 vectors × 32 dimensions from bert-wordpiece, \d+ tokens, \d+ ms · In-page · WASM$/);
    const values = (await page.locator('#embeddings-vectors td.values').allTextContents()).map((row) => row.replace(', …', '').split(', ').map(Number));
    values.forEach((row, i) => row.forEach((value, k) => expect(Math.abs(value - ref.batched[i]![k]!), `input ${i} value ${k}`).toBeLessThanOrEqual(1.5e-4)));
    const cells = await page.locator('#embeddings-similarity tr').evaluateAll((rows) => rows.slice(1).map((row) => Array.from(row.querySelectorAll('td')).map((td) => Number(td.textContent))));
    cells.forEach((row, i) => row.forEach((value, j) => expect(Math.abs(value - cosine(ref.batched[i]!, ref.batched[j]!)), `pair ${i}, ${j}`).toBeLessThanOrEqual(1.5e-3)));
    expect(errors).toEqual([]);
  });
});
