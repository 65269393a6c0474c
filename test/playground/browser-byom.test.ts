/**
 * The in-page engine on a brought model: a URL to a model folder (probed, since a URL
 * cannot be listed) or a folder picked in the page, with dtype variants and external
 * data fetched and handed to onnxruntime-web.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import * as ortWeb from 'onnxruntime-web';
import { afterAll, describe, expect, it } from 'vitest';
import type { OrtRuntime } from '../../src/onnx/ort-runtime.js';
import { createBrowserApp, fetchModelFiles } from '../../src/runtime/browser/engine.js';
import { pickedFolderSource } from '../../src/runtime/browser/model-source.js';
import { shaderF16Refusal } from '../../src/runtime/browser/gpu.js';
import { removeFixtureFolders, writeFixtureFolder } from '../helpers/byom-fixtures.js';

ortWeb.env.wasm.numThreads = 1;
afterAll(removeFixtureFolders);

/** Serves `dir` under http://model.test/m/ and records what was asked. */
function folderFetch(dir: string) {
  const requested: string[] = [];
  const stub = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const path = new URL(String(input)).pathname.replace(/^\/m\//, '');
    requested.push(init?.method === 'HEAD' ? `HEAD ${path}` : path);
    try {
      const bytes = await readFile(join(dir, path));
      return new Response(init?.method === 'HEAD' ? null : new Uint8Array(bytes));
    } catch {
      return new Response(null, { status: 404, statusText: 'Not Found' });
    }
  }) as typeof fetch;
  return { stub, requested };
}

async function listFolder(dir: string): Promise<Array<{ path: string; file: Blob }>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return Promise.all(
    entries
      .filter((entry) => entry.isFile())
      .map(async (entry) => {
        const full = join(entry.parentPath, entry.name);
        // As <input webkitdirectory> names them: the picked folder's name first.
        return { path: `picked/${relative(dir, full)}`, file: new Blob([new Uint8Array(await readFile(full))]) };
      }),
  );
}

const chat = JSON.stringify({ model: 'mine', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 6, temperature: 0 });
const ask = async (app: { fetch: (r: Request) => Response | Promise<Response> }) => {
  const response = await app.fetch(new Request('http://local/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: chat }));
  expect(response.status).toBe(200);
  return ((await response.json()) as { choices: Array<{ message: { content: string } }>; usage: { completion_tokens: number } });
};

describe('the in-page engine on a brought model', () => {
  it('loads the only variant of a URL folder, its external data split over several files, float16 KV', async () => {
    const dir = await writeFixtureFolder({
      files: ['onnx/model_q4f16.onnx'],
      layout: { kvType: 'float16', logitsType: 'float16' },
      externalDataMaxFileBytes: 20_000,
    });
    const { stub, requested } = folderFetch(dir);
    const { app, engine } = await createBrowserApp({ ort: ortWeb as unknown as OrtRuntime, modelBaseUrl: 'http://model.test/m/', servedModelName: 'mine', fetch: stub });
    try {
      expect(engine.loadReport.file).toBe('onnx/model_q4f16.onnx');
      expect(engine.loadReport.contract).toBe('ids int64, KV float16, logits float16, position_ids');
      expect(requested.filter((path) => path.startsWith('onnx/model_q4f16.onnx_data')).length).toBeGreaterThan(1);
      const answer = await ask(app);
      expect(answer.usage.completion_tokens).toBeGreaterThan(0);
    } finally {
      await engine.dispose();
    }
  });

  it('on WebGPU refuses an fp16 / q4f16 variant without shader-f16 before downloading it, naming the float32 variants', async () => {
    const dir = await writeFixtureFolder({ files: ['onnx/model_q4f16.onnx', 'onnx/model_q4.onnx'], layout: { kvType: 'float16', logitsType: 'float16' } });
    const { stub, requested } = folderFetch(dir);
    const start = (adapterFeatures: ReadonlySet<string>) =>
      createBrowserApp({ ort: ortWeb as unknown as OrtRuntime, backend: 'webgpu', modelBaseUrl: 'http://model.test/m/', servedModelName: 'mine', fetch: stub, config: { dtype: 'q4f16' }, adapterFeatures });
    await expect(start(new Set(['timestamp-query']))).rejects.toThrow(
      'This GPU adapter lacks the WebGPU feature "shader-f16", which the q4f16 model onnx/model_q4f16.onnx needs (it computes in float16). ' +
        'Use a float32 variant of this folder: dtype=q4 (onnx/model_q4.onnx), or pick “In-page · WASM”',
    );
    // Only probes: no file of the model was downloaded.
    expect(requested.filter((request) => !request.startsWith('HEAD '))).toEqual([]);
  });

  it('says which variants need shader-f16: fp16 and q4f16 only, and none on an adapter that has it', () => {
    const choice = (dtype: 'fp32' | 'fp16' | 'q4' | 'q4f16' | null) => ({ file: 'onnx/x.onnx', dtype, externalDataFiles: [] });
    const without = new Set<string>();
    expect(shaderF16Refusal(choice('fp16'), without, [])).toContain('The folder has no float32 variant: use one that has onnx/model.onnx with dtype=fp32');
    expect(shaderF16Refusal(choice('q4f16'), without, [{ dtype: 'fp32', file: 'onnx/model.onnx' }])).toContain('dtype=fp32 (onnx/model.onnx)');
    for (const dtype of ['fp32', 'q4', null] as const) expect(shaderF16Refusal(choice(dtype), without, [])).toBeNull();
    expect(shaderF16Refusal(choice('fp16'), new Set(['shader-f16']), [])).toBeNull();
  });

  it('gives a picked folder the same answer as the URL, with the dtype setting choosing the variant', async () => {
    const dir = await writeFixtureFolder({ files: ['onnx/model_fp16.onnx', 'onnx/model_q4.onnx'], externalDataMaxFileBytes: Infinity });
    const config = { dtype: 'q4' };
    const viaUrl = await createBrowserApp({ ort: ortWeb as unknown as OrtRuntime, modelBaseUrl: 'http://model.test/m/', servedModelName: 'mine', fetch: folderFetch(dir).stub, config });
    const picked = await createBrowserApp({
      ort: ortWeb as unknown as OrtRuntime,
      modelBaseUrl: 'unused',
      modelSource: pickedFolderSource(await listFolder(dir)),
      servedModelName: 'mine',
      config,
    });
    try {
      expect(viaUrl.engine.loadReport.file).toBe('onnx/model_q4.onnx');
      expect(picked.engine.loadReport.file).toBe('onnx/model_q4.onnx');
      expect((await ask(picked.app)).choices[0].message.content).toBe((await ask(viaUrl.app)).choices[0].message.content);
    } finally {
      await viaUrl.engine.dispose();
      await picked.engine.dispose();
    }
  });

  it('refuses a URL folder of several variants without fp32, naming those it found', async () => {
    const dir = await writeFixtureFolder({ files: ['onnx/model_fp16.onnx', 'onnx/model_q4.onnx'] });
    await expect(fetchModelFiles('http://model.test/m/', { fetch: folderFetch(dir).stub })).rejects.toThrow(
      'http://model.test/m/ holds several model variants and no fp32 one: fp16 (onnx/model_fp16.onnx), q4 (onnx/model_q4.onnx).',
    );
  });

  it('refuses a graph whose external data file is missing, naming it', async () => {
    const dir = await writeFixtureFolder({ externalDataMaxFileBytes: Infinity });
    const { stub } = folderFetch(dir);
    const withoutData = (async (input: RequestInfo | URL, init?: RequestInit) =>
      String(input).endsWith('.onnx_data') ? new Response(null, { status: 404 }) : stub(input, init)) as typeof fetch;
    await expect(fetchModelFiles('http://model.test/m/', { fetch: withoutData })).rejects.toThrow(
      'onnx/model.onnx keeps its weights in model.onnx_data, which http://model.test/m/ does not have (onnx/model.onnx_data).',
    );
  });
});

