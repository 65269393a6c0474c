/**
 * The page's GGUF path (runtime/browser/gguf.ts) under Node: the file read through a Blob,
 * the graph built in memory with its weights as external data, run by onnxruntime-web's
 * WASM backend in the in-page app. Its greedy text must equal what the Node server gives
 * for the same file (onnxruntime-node on the cache folder node-gguf.ts writes), which
 * test/gguf/llama-server-parity.test.ts checks against llama.cpp's server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { MessageChannel } from 'node:worker_threads';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ortWeb from 'onnxruntime-web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OrtRuntime } from '../../src/onnx/ort-runtime.js';
import type { FileProgress } from '../../src/runtime/browser/downloads.js';
import { createBrowserApp, type BrowserApp } from '../../src/runtime/browser/engine.js';
import { answerGgufBuild, blobByteSource, downloadGguf, ggufNameOf, type GgufBuildMessage } from '../../src/runtime/browser/gguf.js';
import { ggufModelFiles } from '../../src/gguf/gguf-model-files.js';
import { spawnServer, type RunningServer } from '../e2e/spawn-server.js';

const FIXTURES = new URL('../fixtures/gguf/', import.meta.url).pathname;
const PROMPTS = ['Once upon a time', 'The little dog'];

async function ask(fetchFn: (request: Request) => Response | Promise<Response>, base: string, path: string, body: unknown) {
  const response = await fetchFn(new Request(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
  return { status: response.status, json: (await response.json()) as any };
}

async function pageApp(file: string, weights?: 'quantized' | 'float32'): Promise<{ app: BrowserApp; notes: string[]; progress: FileProgress[] }> {
  const bytes = await readFile(join(FIXTURES, file));
  const progress: FileProgress[] = [];
  const { files, notes } = await ggufModelFiles(blobByteSource(new Blob([bytes])), { name: file, weights, onProgress: (p) => progress.push(p), executedBy: 'onnxruntime-web (WebAssembly)' });
  ortWeb.env.wasm.numThreads = 1;
  const app = await createBrowserApp({ ort: ortWeb as unknown as OrtRuntime, files, servedModelName: file });
  return { app, notes, progress };
}

const cacheDir = mkdtempSync(join(tmpdir(), 'browser-gguf-'));

describe('a GGUF in the page (onnxruntime-web WASM) against the Node server on the same file', () => {
  let server: RunningServer;
  let page: Awaited<ReturnType<typeof pageApp>>;
  const file = 'tiny-llama-kquants.gguf';

  beforeAll(async () => {
    [server, page] = await Promise.all([spawnServer({ MODEL_DIR: join(FIXTURES, file), GGUF_CACHE_DIR: cacheDir }), pageApp(file)]);
  }, 240_000);

  afterAll(async () => {
    await page?.app.engine.dispose();
    await server?.stop();
    rmSync(cacheDir, { recursive: true, force: true });
  });

  it('gives the server’s greedy completions and chat, and its /tokenize', async () => {
    const pageFetch = (request: Request) => page.app.app.fetch(request);
    const serverFetch = (request: Request) => fetch(request);
    for (const prompt of PROMPTS) {
      const body = { model: file, prompt, max_tokens: 24, temperature: 0 };
      const [ours, theirs] = await Promise.all([ask(pageFetch, 'http://page', '/v1/completions', body), ask(serverFetch, server.url, '/v1/completions', body)]);
      expect(ours.status).toBe(200);
      expect(ours.json.choices[0].text).toBe(theirs.json.choices[0].text);
      expect(ours.json.usage).toEqual(theirs.json.usage);
      expect(theirs.json.usage.completion_tokens).toBeGreaterThan(4);
    }
    const chat = { model: file, messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 16, temperature: 0 };
    const [ours, theirs] = await Promise.all([ask(pageFetch, 'http://page', '/v1/chat/completions', chat), ask(serverFetch, server.url, '/v1/chat/completions', chat)]);
    expect(ours.json.choices[0].message.content).toBe(theirs.json.choices[0].message.content);
    expect(ours.json.usage.prompt_tokens).toBe(theirs.json.usage.prompt_tokens);
    const tokenize = { model: file, prompt: 'Once upon a time, café ☃' };
    const [a, b] = await Promise.all([ask(pageFetch, 'http://page', '/tokenize', tokenize), ask(serverFetch, server.url, '/tokenize', tokenize)]);
    expect(a.json.tokens).toEqual(b.json.tokens);
  }, 120_000);

  it('reports the architecture, the tensor types and how each is executed, and its graph build progress', () => {
    expect(page.notes[0]).toMatch(/^GGUF: architecture llama/);
    expect(page.notes.some((line) => /^GGUF Q4_K ×\d+: MatMulNBits/.test(line))).toBe(true);
    expect(page.notes.some((line) => /^GGUF Q6_K ×\d+:/.test(line))).toBe(true);
    expect(page.notes.at(-1)).toContain('built in memory, executed by onnxruntime-web (WebAssembly) (quantized weights');
    const build = page.progress.filter((p) => p.file === `${file} (building the graph)`);
    expect(build[0]!.loadedBytes).toBe(0);
    expect(build.at(-1)!.loadedBytes).toBe(build.at(-1)!.totalBytes);
    for (let i = 1; i < build.length; i++) expect(build[i]!.loadedBytes).toBeGreaterThanOrEqual(build[i - 1]!.loadedBytes);
    expect(build.length).toBeGreaterThan(3);
  });
});

describe('the page’s GGUF build worker (its message handler, over a real MessageChannel)', () => {
  it('posts progress, then the files with the graph and weight buffers moved, not copied', async () => {
    const bytes = await readFile(join(FIXTURES, 'tiny-llama-kquants.gguf'));
    const { port1, port2 } = new MessageChannel();
    const received: GgufBuildMessage[] = [];
    const done = new Promise<void>((resolve) =>
      port2.on('message', (message: GgufBuildMessage) => {
        received.push(message);
        if (message.type !== 'progress') resolve();
      }),
    );
    let sent: Extract<GgufBuildMessage, { type: 'built' }> | undefined;
    await answerGgufBuild({ blob: new Blob([bytes]), name: 'tiny-llama-kquants.gguf' }, (message, transfer) => {
      if (message.type === 'built') sent = message;
      port1.postMessage(message, transfer as never);
    });
    await done;
    port1.close();
    const built = received.at(-1)!;
    expect(built.type).toBe('built');
    if (built.type !== 'built' || !sent) return;
    expect(received.filter((m) => m.type === 'progress').length).toBeGreaterThan(3);
    // The sender's views are detached: their buffers moved with the message.
    expect(sent.files.onnx.byteLength).toBe(0);
    expect(sent.files.externalData![0]!.data.byteLength).toBe(0);
    // And arrived whole: the same bytes the in-memory build gives.
    const direct = await ggufModelFiles(blobByteSource(new Blob([bytes])), { name: 'tiny-llama-kquants.gguf' });
    expect(Buffer.from(built.files.onnx).equals(Buffer.from(direct.files.onnx))).toBe(true);
    expect(Buffer.from(built.files.externalData![0]!.data).equals(Buffer.from(direct.files.externalData![0]!.data))).toBe(true);
    expect(built.notes.at(-1)).toContain('built in a Web Worker of this page');
  }, 60_000);

  it('posts a corrupt file’s refusal as a message, with the reason', async () => {
    const bytes = await readFile(join(FIXTURES, 'tiny-qwen2.gguf'));
    const posted: GgufBuildMessage[] = [];
    await answerGgufBuild({ blob: new Blob([bytes.subarray(0, 5000)]), name: 'cut.gguf' }, (message) => posted.push(message));
    expect(posted).toEqual([{ type: 'failed', message: expect.stringMatching(/^Cannot load the GGUF "cut.gguf": .*(truncated|ends)/) }]);
  });
});

describe('the page’s GGUF reading', () => {
  it('refuses a truncated file with the reason, before building anything', async () => {
    const bytes = await readFile(join(FIXTURES, 'tiny-qwen2.gguf'));
    await expect(ggufModelFiles(blobByteSource(new Blob([bytes.subarray(0, 5000)])), { name: 'cut.gguf' })).rejects.toThrow(/Cannot load the GGUF "cut.gguf": .*(truncated|ends)/);
  });

  it('downloads a URL into a Blob with progress up to its length, and names it as Node does', async () => {
    const bytes = await readFile(join(FIXTURES, 'tiny-qwen2.gguf'));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < bytes.length; offset += 100_000) controller.enqueue(new Uint8Array(bytes.subarray(offset, offset + 100_000)));
        controller.close();
      },
    });
    const progress: FileProgress[] = [];
    const stub = (async () => new Response(stream, { headers: { 'content-length': String(bytes.length) } })) as unknown as typeof fetch;
    const blob = await downloadGguf('https://host.test/models/tiny%20qwen2.gguf?download=1', stub, (p) => progress.push(p));
    expect(Buffer.from(await blob.arrayBuffer()).equals(bytes)).toBe(true);
    expect(progress[0]).toEqual({ file: 'tiny qwen2.gguf', loadedBytes: 0, totalBytes: bytes.length });
    expect(progress.length).toBeGreaterThan(3);
    expect(progress.at(-1)).toEqual({ file: 'tiny qwen2.gguf', loadedBytes: bytes.length, totalBytes: bytes.length });
    expect(ggufNameOf('model.gguf')).toBe('model.gguf');
    const refused = (async () => new Response('no', { status: 404, statusText: 'Not Found' })) as unknown as typeof fetch;
    await expect(downloadGguf('https://host.test/x.gguf', refused)).rejects.toThrow('Cannot download https://host.test/x.gguf: HTTP 404 Not Found');
  });
});
