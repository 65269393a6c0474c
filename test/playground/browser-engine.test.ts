/**
 * The in-page engine module, run under Node on onnxruntime-web's WASM backend with the
 * model fetched over a stub: it must answer exactly as the server app on
 * onnxruntime-node does for a seeded request (the page's promise of "same text").
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as ortWeb from 'onnxruntime-web';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_SERVER_CONFIG } from '../../src/config/server-config.js';
import type { OrtRuntime } from '../../src/engine/ort-runtime.js';
import { createApp } from '../../src/http/app.js';
import { createBrowserApp, fetchModelFiles, type BrowserApp } from '../../src/runtime/browser-engine.js';
import { embeddedEngine, MODEL_DIR } from '../helpers/model.js';

/** Serves the model directory under http://model.test/ and records what was asked. */
function modelFetch(missing: string[] = []) {
  const requested: string[] = [];
  const stub = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(String(input));
    requested.push(init?.method === 'HEAD' ? `HEAD ${url.pathname}` : url.pathname);
    const path = url.pathname.replace(/^\/stories\//, '');
    if (missing.includes(path)) return new Response('nope', { status: 404, statusText: 'Not Found' });
    try {
      return new Response(new Uint8Array(await readFile(join(MODEL_DIR, path))));
    } catch {
      return new Response('nope', { status: 404, statusText: 'Not Found' });
    }
  }) as typeof fetch;
  return { stub, requested };
}

describe('fetchModelFiles', () => {
  it('downloads the Hugging Face ONNX layout and reports progress on the weights', async () => {
    const { stub, requested } = modelFetch();
    let progress = 0;
    const files = await fetchModelFiles('http://model.test/stories', { fetch: stub, onProgress: (bytes) => (progress = bytes) });
    // HEAD: the graph variant is probed first (a URL cannot be listed); fp32 is there, so nothing else is asked.
    expect(requested.sort()).toEqual([
      'HEAD /stories/onnx/model.onnx',
      ...['config.json', 'generation_config.json', 'onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json'].map((p) => `/stories/${p}`),
    ].sort());
    expect(Buffer.from(files.onnx).equals(await readFile(join(MODEL_DIR, 'onnx', 'model.onnx')))).toBe(true);
    expect(progress).toBe(files.onnx.byteLength);
    expect(files.config).toEqual(JSON.parse(await readFile(join(MODEL_DIR, 'config.json'), 'utf8')));
  });

  it('treats generation_config.json as optional, the other files as required', async () => {
    const optional = await fetchModelFiles('http://model.test/stories/', { fetch: modelFetch(['generation_config.json']).stub });
    expect(optional.generationConfig).toBeUndefined();
    await expect(fetchModelFiles('http://model.test/stories/', { fetch: modelFetch(['tokenizer.json']).stub })).rejects.toThrow(
      'Cannot download http://model.test/stories/tokenizer.json: HTTP 404 Not Found',
    );
  });
});

describe('createBrowserApp', () => {
  let browser: BrowserApp | undefined;
  afterAll(async () => browser?.engine.dispose());

  it('answers a seeded request with the same text as the server on onnxruntime-node', async () => {
    ortWeb.env.wasm.numThreads = 1;
    browser = await createBrowserApp({
      ort: ortWeb as unknown as OrtRuntime,
      modelBaseUrl: 'http://model.test/stories/',
      servedModelName: 'stories260k',
      fetch: modelFetch().stub,
    });
    const server = createApp({ engine: await embeddedEngine('native'), config: DEFAULT_SERVER_CONFIG });
    const body = JSON.stringify({ model: 'stories260k', prompt: 'Once upon a time', max_tokens: 40, temperature: 0.9, top_k: 50, seed: 1234 });
    const ask = async (fetchFn: (r: Request) => Response | Promise<Response>) => {
      const response = await fetchFn(new Request('http://local/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body }));
      expect(response.status).toBe(200);
      return ((await response.json()) as { choices: Array<{ text: string }> }).choices[0]!.text;
    };
    const inPage = await ask((r) => browser!.app.fetch(r));
    const onServer = await ask((r) => server.fetch(r));
    expect(inPage.length).toBeGreaterThan(20);
    expect(inPage).toBe(onServer);
  });
});
