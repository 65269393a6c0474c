/**
 * The in-page engine (onnxruntime-web, WASM) with a LoRA adapter fetched by URL: the same
 * text as the Node server on onnxruntime-node with the adapter read from disk.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as ortWeb from 'onnxruntime-web';
import { afterAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { OrtRuntime } from '../../src/onnx/ort-runtime.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createApp } from '../../src/http/app.js';
import { createBrowserApp, type BrowserApp } from '../../src/runtime/browser/engine.js';
import { nodeLoraOptions } from '../../src/runtime/node/adapters.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { MODEL_DIR, REPO_ROOT } from '../helpers/model.js';

/** Serves the repository under http://site.test/ (the model and adapters/story). */
const siteFetch = (async (input: RequestInfo | URL) => {
  try {
    return new Response(new Uint8Array(await readFile(join(REPO_ROOT, new URL(String(input)).pathname))));
  } catch {
    return new Response('nope', { status: 404 });
  }
}) as typeof fetch;

describe('LoRA adapters in the in-page engine', () => {
  let browser: BrowserApp | undefined;
  let server: LocalEngine | undefined;
  afterAll(async () => {
    await browser?.engine.dispose();
    await server?.dispose();
  });

  it('answers with the adapter exactly as the Node server does, base requests unchanged', async () => {
    ortWeb.env.wasm.numThreads = 1;
    browser = await createBrowserApp({
      ort: ortWeb as unknown as OrtRuntime,
      modelBaseUrl: 'http://site.test/models/stories260k/',
      servedModelName: 'stories260k',
      config: { loraModules: 'story=../../adapters/story' },
      fetch: siteFetch,
    });
    const config = parseServerConfig({ modelDir: MODEL_DIR, servedModelName: 'stories260k', loraModules: `story=${join(REPO_ROOT, 'adapters/story')}` });
    server = await createNodeEngine({ modelDir: MODEL_DIR, servedModelName: 'stories260k', lora: nodeLoraOptions(config) });
    const serverApp = createApp({ engine: server, config });
    const ask = async (fetchFn: (r: Request) => Response | Promise<Response>, model: string) => {
      const body = JSON.stringify({ model, prompt: 'Once upon a time', max_tokens: 40, temperature: 0.9, top_k: 50, seed: 99 });
      const response = await fetchFn(new Request('http://local/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body }));
      expect(response.status).toBe(200);
      return ((await response.json()) as { choices: Array<{ text: string }> }).choices[0]!.text;
    };
    const inPage = await ask((r) => browser!.app.fetch(r), 'story');
    expect(inPage).toBe(await ask((r) => serverApp.fetch(r), 'story'));
    const base = await ask((r) => browser!.app.fetch(r), 'stories260k');
    expect(base).toBe(await ask((r) => serverApp.fetch(r), 'stories260k'));
    expect(inPage).not.toBe(base);
  });

  it('refuses an adapter URL that does not serve one, naming the file', async () => {
    await expect(
      createBrowserApp({
        ort: ortWeb as unknown as OrtRuntime,
        modelBaseUrl: 'http://site.test/models/stories260k/',
        servedModelName: 'stories260k',
        config: { loraModules: 'gone=../../adapters/gone' },
        fetch: siteFetch,
      }),
    ).rejects.toThrow(/cannot download http:\/\/site\.test\/adapters\/gone\/adapter_config\.json: HTTP 404/);
  });
});
