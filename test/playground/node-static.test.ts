import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { playgroundRoutes } from '../../src/runtime/node/static.js';
import { MODEL_DIR, REPO_ROOT } from '../helpers/model.js';

describe('playgroundRoutes', () => {
  let root: string;
  const app = () => playgroundRoutes({ rootDir: root, modelDir: MODEL_DIR });

  beforeAll(async () => {
    // A root of its own: the real dist/ may be rebuilt by another test at the same time.
    root = await mkdtemp(join(tmpdir(), 'playground-static-'));
    await mkdir(join(root, 'public', 'src'), { recursive: true });
    await mkdir(join(root, 'dist', 'playground', 'chunks'), { recursive: true });
    await writeFile(join(root, 'public', 'index.html'), '<!doctype html><title>t</title>');
    await writeFile(join(root, 'public', 'playground.css'), 'body{}');
    await writeFile(join(root, 'public', 'src', 'main.ts'), 'secret source');
    await writeFile(join(root, 'dist', 'playground', 'playground.js'), 'console.log(1)');
    await writeFile(join(root, 'dist', 'playground', 'chunks', 'ort.wasm.bundle.min-AB12.js'), 'chunk');
  });

  it('serves the page at / with an HTML content type', async () => {
    const response = await app().request('/');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toContain('<title>t</title>');
  });

  it('serves the stylesheet from public/ and the bundle and its chunks from dist/playground/', async () => {
    const css = await app().request('/playground/playground.css');
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    const js = await app().request('/playground/playground.js');
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await js.text()).toBe('console.log(1)');
    expect((await app().request('/playground/chunks/ort.wasm.bundle.min-AB12.js')).status).toBe(200);
  });

  it('serves onnxruntime-web’s wasm as application/wasm (instantiateStreaming requires it)', async () => {
    const response = await app().request('/playground/ort/ort-wasm-simd-threaded.wasm');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/wasm');
    const bytes = new Uint8Array(await response.arrayBuffer());
    expect([...bytes.subarray(0, 4)]).toEqual([0x00, 0x61, 0x73, 0x6d]); // "\0asm"
  });

  it('serves the model files the in-page engine needs, byte for byte', async () => {
    const onnx = await app().request('/playground/model/onnx/model.onnx');
    // Buffer.equals: a deep toEqual over a megabyte takes seconds.
    expect(Buffer.from(await onnx.arrayBuffer()).equals(await readFile(join(MODEL_DIR, 'onnx', 'model.onnx')))).toBe(true);
    const config = await app().request('/playground/model/config.json');
    expect(await config.json()).toEqual(JSON.parse(await readFile(join(MODEL_DIR, 'config.json'), 'utf8')));
  });

  it('refuses everything else: sources, other model files, other packages, path tricks', async () => {
    for (const path of [
      '/playground/src/main.ts',
      '/playground/model/README.md',
      '/playground/model/../../package.json',
      '/playground/..%2Fpackage.json',
      '/playground/ort/ort.node.min.mjs',
      '/playground/ort/..%2F..%2Fpackage.json',
      '/playground/chunks/../../../package.json',
    ]) {
      const response = await app().request(path);
      expect(response.status, path).toBe(404);
      expect(await response.text(), path).not.toMatch(/edge-llm|secret source|Metaspace/);
    }
  });

  it('makes the page cross-origin isolated: COOP/COEP on the page, CORP on every file', async () => {
    for (const path of ['/', '/playground/playground.css', '/playground/playground.js', '/playground/ort/ort-wasm-simd-threaded.wasm', '/playground/model/onnx/model.onnx']) {
      const response = await app().request(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('cross-origin-opener-policy'), path).toBe('same-origin');
      expect(response.headers.get('cross-origin-embedder-policy'), path).toBe('require-corp');
      expect(response.headers.get('cross-origin-resource-policy'), path).toBe('same-origin');
      await response.body?.cancel();
    }
  });

  it('answers a revalidation of an unchanged file with 304 and no body, and a changed one in full', async () => {
    const first = await app().request('/playground/playground.css');
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^W\/"[0-9a-f]+-[0-9a-f]+"$/);
    const again = await app().request('/playground/playground.css', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    await writeFile(join(root, 'public', 'playground.css'), 'body{color:red}');
    const changed = await app().request('/playground/playground.css', { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(await changed.text()).toBe('body{color:red}');
  });

  it('says how to build the script when the bundle is missing', async () => {
    const response = await playgroundRoutes({ rootDir: join(root, 'nowhere') }).request('/playground/playground.js');
    expect(response.status).toBe(404);
    expect((await response.json()).message).toContain('npm run build:playground');
  });

  it('defaults to this repository’s public/ and embedded model', async () => {
    const response = await playgroundRoutes().request('/playground/model/config.json');
    expect(await response.json()).toEqual(JSON.parse(await readFile(join(REPO_ROOT, 'models', 'stories260k', 'config.json'), 'utf8')));
    expect((await playgroundRoutes().request('/')).status).toBe(200);
  });
});
