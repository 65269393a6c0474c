/**
 * The playground as the Worker's static assets (scripts/build-worker-assets.ts): the files
 * the page loads under the URLs `npm start` uses, each within the 25 MiB asset limit, the
 * headers that isolate the page, and a rebuild that leaves an unchanged folder alone (a
 * running `wrangler dev` may be serving it).
 */
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorkerAssets, WORKER_ASSET_MAX_BYTES } from '../../scripts/build-worker-assets.js';
import { MODEL_DIR } from '../helpers/model.js';

let parent: string;
let outDir: string;
let files: Record<string, number>;

beforeAll(async () => {
  parent = await mkdtemp(join(tmpdir(), 'worker-assets-'));
  ({ outDir, files } = await buildWorkerAssets(join(parent, 'assets')));
});

afterAll(async () => {
  await rm(parent, { recursive: true, force: true });
});

describe('buildWorkerAssets', () => {
  it('lays out the page, its bundle, the WASM and jspi WebGPU builds and the model as `npm start` serves them', async () => {
    expect(Object.keys(files)).toEqual(
      expect.arrayContaining([
        'index.html',
        '_headers',
        'playground/playground.js',
        'playground/playground.css',
        'playground/icon.svg',
        'playground/service-worker.js',
        'playground/ort/ort-wasm-simd-threaded.wasm',
        'playground/ort/ort-wasm-simd-threaded.jspi.wasm',
        'playground/model/config.json',
        'playground/model/tokenizer.json',
        'playground/model/tokenizer_config.json',
        'playground/model/generation_config.json',
        'playground/model/onnx/model.onnx',
      ]),
    );
    expect(Object.keys(files).filter((file) => file.includes('asyncify') || file.includes('jsep'))).toEqual([]);
    for (const [file, size] of Object.entries(files)) expect(size, file).toBeLessThanOrEqual(WORKER_ASSET_MAX_BYTES);
    expect((await readFile(join(outDir, 'playground/model/onnx/model.onnx'))).equals(await readFile(join(MODEL_DIR, 'onnx/model.onnx')))).toBe(true);
    const html = await readFile(join(outDir, 'index.html'), 'utf8');
    expect(html).toContain('<meta name="edge-llm-webgpu-build" content="jspi">');
    expect(html).toContain('<script type="module" src="playground/playground.js"></script>');
  });

  it('sends COOP/COEP/CORP on every file and lets the service worker control the page', async () => {
    const headers = await readFile(join(outDir, '_headers'), 'utf8');
    expect(headers).toContain(
      ['/*', '  cross-origin-opener-policy: same-origin', '  cross-origin-embedder-policy: require-corp', '  cross-origin-resource-policy: same-origin'].join('\n'),
    );
    expect(headers).toContain(['/playground/service-worker.js', '  service-worker-allowed: ../'].join('\n'));
  });

  it('leaves an unchanged folder in place on a rebuild', async () => {
    const before = await stat(join(outDir, 'index.html'));
    const again = await buildWorkerAssets(outDir);
    expect(again.files).toEqual(files);
    expect((await stat(join(outDir, 'index.html'))).ino).toBe(before.ino);
  });
});
