/**
 * Bundles the playground page's script (src/runtime/browser/playground.ts and what it
 * imports: the UI in public/src, and lazily the in-page engine with onnxruntime-web)
 * into dist/playground/. Runs before `npm start` (prestart) and from the e2e test; it
 * takes about a second. The page's HTML and CSS are served from public/ as they are.
 *
 *   npm run build:playground
 */
import { createHash } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { GGUF_WORKER_SCRIPT } from '../src/runtime/playground-files.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const PLAYGROUND_ENTRY = `${ROOT}src/runtime/browser/playground.ts`;
export const PLAYGROUND_OUT_DIR = `${ROOT}dist/playground`;
export const SERVICE_WORKER_ENTRY = `${ROOT}src/runtime/browser/service-worker.ts`;
/** The Web Worker that builds a picked GGUF's graph off the page's main thread (a module worker). */
export const GGUF_WORKER_ENTRY = `${ROOT}src/runtime/browser/gguf-worker.ts`;
/** The browsers the page and its service worker are built for (WebGPU-era releases). */
const BROWSER_TARGETS = ['es2022', 'chrome113', 'firefox115', 'safari16.4'];
/** public/ files the page loads as they are (the service worker keeps them with the bundle). */
const PUBLIC_SHELL_FILES = ['playground.css', 'icon.svg'];

export interface BuildResult {
  outDir: string;
  /** Output file → size in bytes. */
  files: Record<string, number>;
  /** What the service worker keeps for offline reloads: paths relative to the page, and their content's hash. */
  shell: { version: string; files: string[] };
}

/**
 * @param options.outDir where to write (default dist/playground/, what `npm start` serves);
 *   test files that run in parallel each build into their own.
 */
export async function buildPlayground(options: { minify?: boolean; outDir?: string } = {}): Promise<BuildResult> {
  const outDir = options.outDir ?? PLAYGROUND_OUT_DIR;
  await rm(outDir, { recursive: true, force: true });
  const result = await build({
    // The GGUF build worker is an entry of the same build, so it shares the chunks
    // (onnx writer, GGUF reader) with the page and sits in the service worker's shell.
    entryPoints: { playground: PLAYGROUND_ENTRY, [GGUF_WORKER_SCRIPT.replace(/\.js$/, '')]: GGUF_WORKER_ENTRY },
    outdir: outDir,
    bundle: true,
    // The in-page engine (hono, tokenizer, onnxruntime-web) is a separate chunk, loaded
    // only when a visitor switches to in-page mode.
    splitting: true,
    format: 'esm',
    platform: 'browser',
    target: BROWSER_TARGETS,
    minify: options.minify ?? true,
    sourcemap: 'linked',
    metafile: true,
    legalComments: 'linked',
    logLevel: 'warning',
    chunkNames: 'chunks/[name]-[hash]',
  });
  const files: Record<string, number> = {};
  for (const [path, output] of Object.entries(result.metafile.outputs)) files[path] = output.bytes;
  const shell = await shellManifest(outDir, Object.keys(files));
  // The service worker names its cache after the shell's hash: a rebuilt page is a new
  // script, so browsers install it and it deletes the previous build's cache.
  const worker = await build({
    entryPoints: { 'service-worker': SERVICE_WORKER_ENTRY },
    outdir: outDir,
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: BROWSER_TARGETS,
    minify: options.minify ?? true,
    metafile: true,
    logLevel: 'warning',
    define: { __PLAYGROUND_SHELL__: JSON.stringify(shell) },
  });
  for (const [path, output] of Object.entries(worker.metafile.outputs)) files[path] = output.bytes;
  return { outDir, files, shell };
}

/** The page (''), its stylesheet and icon, and every script of the bundle, with a hash of all their bytes. */
async function shellManifest(outDir: string, outputs: string[]): Promise<BuildResult['shell']> {
  const scripts = outputs.map((path) => relative(outDir, resolve(path)).split('\\').join('/')).filter((path) => path.endsWith('.js')).sort();
  const hash = createHash('sha256');
  hash.update(await readFile(`${ROOT}public/index.html`));
  for (const file of PUBLIC_SHELL_FILES) hash.update(await readFile(`${ROOT}public/${file}`));
  for (const script of scripts) hash.update(await readFile(`${outDir}/${script}`));
  return {
    version: hash.digest('hex').slice(0, 16),
    files: ['', ...PUBLIC_SHELL_FILES.map((file) => `playground/${file}`), ...scripts.map((script) => `playground/${script}`)],
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = performance.now();
  buildPlayground()
    .then(({ files }) => {
      const scripts = Object.entries(files).filter(([path]) => path.endsWith('.js'));
      const kb = scripts.reduce((sum, [, bytes]) => sum + bytes, 0) / 1024;
      console.log(`Playground built: ${scripts.length} scripts, ${kb.toFixed(0)} kB, in ${(performance.now() - started).toFixed(0)} ms`);
    })
    .catch((error: unknown) => {
      console.error('Playground build failed:', error instanceof Error ? error.message : error);
      process.exit(1);
    });
}
