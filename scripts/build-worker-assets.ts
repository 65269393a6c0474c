/**
 * The playground as the Worker's static assets (wrangler.toml's [assets], dist/worker-assets/):
 * the page, its bundle and service worker, onnxruntime-web's .wasm files and the embedded
 * model, laid out under the same URLs `npm start` serves, with a `_headers` file that makes
 * the page cross-origin isolated (so in-page WASM gets threads on the Worker too).
 *
 * Workers static assets cap a file at 25 MiB. onnxruntime-web's usual WebGPU build is over
 * it (asyncify, 26.8 MB of .wasm), so the Worker serves its `jspi` build (16.8 MB, the same
 * backend on WebAssembly's JavaScript Promise Integration, Chromium 137+); the page's HTML
 * says so in a meta tag (playground-files.ts), and in browsers without JSPI the page says
 * why it offers WASM only.
 *
 * Runs in wrangler's [build] command (before `npm run dev` / `wrangler deploy`) and from
 * the workerd tests' global setup.
 *
 *   npx tsx scripts/build-worker-assets.ts
 */
import { copyFile, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MODEL_FILE_PATHS } from '../src/onnx/model-files.js';
import { ORT_WASM_FILES, WEBGPU_WASM_FILES } from '../src/runtime/browser/ort.js';
import { CROSS_ORIGIN_ISOLATION, SERVICE_WORKER_PATH, SERVICE_WORKER_SCOPE_HEADER, WEBGPU_BUILD_META } from '../src/runtime/playground-files.js';
import { EMBEDDED_MODEL_DIR } from '../src/runtime/worker/tokenizer-files.js';
import { buildPlayground } from './build-playground.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const WORKER_ASSETS_DIR = `${ROOT}dist/worker-assets`;
/** Workers static assets refuse larger files (per file, on every plan). */
export const WORKER_ASSET_MAX_BYTES = 25 * 1024 * 1024;

function headersFile(): string {
  const lines = (headers: Readonly<Record<string, string>>) => Object.entries(headers).map(([name, value]) => `  ${name}: ${value}`);
  return [
    '# Written by scripts/build-worker-assets.ts: the page and every file it loads are cross-origin isolated.',
    '/*',
    ...lines(CROSS_ORIGIN_ISOLATION),
    `/${SERVICE_WORKER_PATH}`,
    ...lines(SERVICE_WORKER_SCOPE_HEADER),
    '',
  ].join('\n');
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => relative(dir, join(entry.parentPath, entry.name)).split('\\').join('/'));
}

/** Builds into a fresh folder, then swaps it in: wrangler may be reading the previous one. */
export async function buildWorkerAssets(outDir = WORKER_ASSETS_DIR): Promise<{ outDir: string; files: Record<string, number> }> {
  const staging = `${outDir}.staging-${process.pid}-${Date.now()}`;
  await buildPlayground({ outDir: join(staging, 'playground') });

  const html = await readFile(join(ROOT, 'public', 'index.html'), 'utf8');
  const meta = `<meta name="${WEBGPU_BUILD_META}" content="jspi">`;
  if (!html.includes('<meta name="viewport"')) throw new Error('public/index.html: no viewport meta tag to put the WebGPU build after');
  await writeFile(join(staging, 'index.html'), html.replace(/(<meta name="viewport"[^>]*>)/, `$1\n  ${meta}`));
  for (const file of ['playground.css', 'icon.svg']) await copyFile(join(ROOT, 'public', file), join(staging, 'playground', file));

  await mkdir(join(staging, 'playground', 'ort'), { recursive: true });
  for (const file of [ORT_WASM_FILES.wasm, WEBGPU_WASM_FILES.jspi]) {
    await copyFile(createRequire(import.meta.url).resolve(`onnxruntime-web/${file}`), join(staging, 'playground', 'ort', file));
  }

  const modelDir = join(ROOT, EMBEDDED_MODEL_DIR);
  for (const file of Object.values(MODEL_FILE_PATHS)) {
    const from = join(modelDir, file);
    if (!(await stat(from).catch(() => null))?.isFile()) continue; // optional files (processor configs)
    await mkdir(dirname(join(staging, 'playground', 'model', file)), { recursive: true });
    await copyFile(from, join(staging, 'playground', 'model', file));
  }
  await writeFile(join(staging, '_headers'), headersFile());

  const files: Record<string, number> = {};
  for (const file of await filesUnder(staging)) {
    const { size } = await stat(join(staging, file));
    if (size > WORKER_ASSET_MAX_BYTES) throw new Error(`${file} is ${(size / 2 ** 20).toFixed(1)} MiB: Workers static assets take at most 25 MiB per file`);
    files[file] = size;
  }
  // Unchanged (the build is deterministic): leave the folder a running wrangler dev serves alone.
  if (await sameFiles(staging, outDir, Object.keys(files))) await rm(staging, { recursive: true, force: true });
  else await swapIn(staging, outDir);
  return { outDir, files };
}

async function sameFiles(built: string, existing: string, files: string[]): Promise<boolean> {
  const present = await filesUnder(existing).catch(() => null);
  if (!present || present.length !== files.length) return false;
  for (const file of files) {
    const [a, b] = await Promise.all([readFile(join(built, file)), readFile(join(existing, file)).catch(() => null)]);
    if (!b || !a.equals(b)) return false;
  }
  return true;
}

/** Another build (a parallel test's wrangler dev) may swap its folder in between our two renames: retry. */
async function swapIn(staging: string, outDir: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const previous = `${outDir}.previous-${process.pid}-${Date.now()}-${attempt}`;
    await rename(outDir, previous).catch(() => {});
    try {
      await rename(staging, outDir);
      await rm(previous, { recursive: true, force: true });
      return;
    } catch (error) {
      await rm(previous, { recursive: true, force: true });
      if (attempt >= 5) {
        await rm(staging, { recursive: true, force: true });
        throw error;
      }
    }
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  buildWorkerAssets()
    .then(({ files }) => {
      const bytes = Object.values(files).reduce((sum, size) => sum + size, 0);
      console.log(`Worker assets built: ${Object.keys(files).length} files, ${(bytes / 2 ** 20).toFixed(1)} MiB, in dist/worker-assets/`);
    })
    .catch((error: unknown) => {
      console.error('Worker assets build failed:', error instanceof Error ? error.message : error);
      process.exit(1);
    });
}
