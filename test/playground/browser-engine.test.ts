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
import type { OrtRuntime } from '../../src/onnx/ort-runtime.js';
import { createApp } from '../../src/http/app.js';
import { readWithProgress, type FileProgress } from '../../src/runtime/browser/downloads.js';
import { createBrowserApp, fetchModelFiles, type BrowserApp } from '../../src/runtime/browser/engine.js';
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
  it('downloads the Hugging Face ONNX layout and reports each file’s progress up to its full size', async () => {
    const { stub, requested } = modelFetch();
    const progress: FileProgress[] = [];
    const files = await fetchModelFiles('http://model.test/stories', { fetch: stub, onProgress: (p) => progress.push(p) });
    // HEAD: the graph variant is probed first (a URL cannot be listed); fp32 is there, so nothing else is asked.
    expect(requested.sort()).toEqual([
      'HEAD /stories/onnx/model.onnx',
      ...['config.json', 'generation_config.json', 'onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json'].map((p) => `/stories/${p}`),
      // transformers 5 keeps the chat template in files of its own: asked for, absent here (404).
      ...['chat_template.jinja', 'chat_template.json'].map((p) => `/stories/${p}`),
    ].sort());
    expect(Buffer.from(files.onnx).equals(await readFile(join(MODEL_DIR, 'onnx', 'model.onnx')))).toBe(true);
    const onnx = progress.filter((p) => p.file === 'model.onnx');
    expect(onnx[0]).toEqual({ file: 'model.onnx', loadedBytes: 0, totalBytes: null });
    expect(onnx.at(-1)).toEqual({ file: 'model.onnx', loadedBytes: files.onnx.byteLength, totalBytes: files.onnx.byteLength });
    for (let i = 1; i < onnx.length; i++) expect(onnx[i]!.loadedBytes).toBeGreaterThanOrEqual(onnx[i - 1]!.loadedBytes);
    expect(new Set(progress.map((p) => p.file))).toEqual(new Set(['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.onnx']));
    expect(files.config).toEqual(JSON.parse(await readFile(join(MODEL_DIR, 'config.json'), 'utf8')));
  });

  it('reports the declared length as the total while the body arrives', async () => {
    const body = new Uint8Array(300_000).fill(7);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < body.length; offset += 100_000) controller.enqueue(body.subarray(offset, offset + 100_000));
        controller.close();
      },
    });
    const progress: FileProgress[] = [];
    const bytes = await readWithProgress(new Response(stream, { headers: { 'content-length': '300000' } }), 'weights.bin', (p) => progress.push(p));
    expect(bytes).toEqual(body);
    expect(progress.map((p) => [p.loadedBytes, p.totalBytes])).toEqual([[0, 300000], [100000, 300000], [200000, 300000], [300000, 300000]]);
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
