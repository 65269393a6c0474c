/**
 * Compiles the `edge-llm` command line and the Node server (src/cli/main.ts, src/runtime/node/main.ts
 * and what they import) into one ES module, dist/node/server.js, that plain `node` runs: `npm
 * start` is `node dist/node/server.js serve`,
 * so SIGTERM and SIGINT reach the server itself whatever started it (no tsx wrapper
 * process in between). Packages stay external (resolved from node_modules at run time,
 * onnxruntime-node's native addon included); only this repository's TypeScript is bundled,
 * which takes well under a second. Two more entries are the model's and media decoding's worker threads. The output sits two levels below the repository root,
 * like src/runtime/, so paths the server derives from its own location still hold.
 *
 *   npm run build   (runs before npm start, and once before the e2e tests)
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The command line (src/cli/main.ts), which runs the Node server (src/runtime/node/main.ts). */
export const SERVER_ENTRY = `${ROOT}src/cli/main.ts`;
export const SERVER_OUT_FILE = `${ROOT}dist/node/server.js`;
/** The embedding API (package.json `exports["."]`): dist/node/index.js. */
const EMBEDDING_ENTRY = `${ROOT}src/runtime/node/index.ts`;
/**
 * The model's worker thread (modelThread "worker") runs its own module, found beside the
 * server bundle (src/engine/model-thread/worker-decoder.ts looks for ./decoder-worker.js).
 */
const WORKER_ENTRY = `${ROOT}src/engine/model-thread/decoder-worker.ts`;
/** Media decoding's thread (src/media/node-decode-worker.ts looks for ./media-decode-worker.js). */
const MEDIA_WORKER_ENTRY = `${ROOT}src/media/media-decode-worker.ts`;
/** The tokenizer's thread (src/tokenizer/node-tokenizer-thread.ts looks for ./tokenizer-thread-worker.js). */
const TOKENIZER_WORKER_ENTRY = `${ROOT}src/tokenizer/tokenizer-thread-worker.ts`;
/** The chat template's thread (src/tokenizer/node-template-thread.ts looks for ./template-thread-worker.js). */
const TEMPLATE_WORKER_ENTRY = `${ROOT}src/tokenizer/template-thread-worker.ts`;
/** Structured output's thread (src/guided/guide-thread.ts looks for ./guide-thread-worker.js). */
const GUIDE_WORKER_ENTRY = `${ROOT}src/guided/guide-thread-worker.ts`;

function startScriptWords(): string[] {
  const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { scripts: { start: string } };
  const words = pkg.scripts.start.trim().split(/\s+/);
  if (!words.includes('node') || words.at(-2) !== 'dist/node/server.js' || words.at(-1) !== 'serve') {
    throw new Error(`package.json's start script is not "[NAME=value ...] exec node ... dist/node/server.js serve": ${pkg.scripts.start}`);
  }
  return words;
}

/**
 * The arguments `npm start` passes to node (package.json's start script is
 * `[NAME=value ...] exec node <args>`), for whatever else starts the server as it does: the
 * e2e tests and the bench's figures. One place, so a V8 flag added there is measured too.
 */
export function npmStartArgs(): string[] {
  const words = startScriptWords();
  return words.slice(words.indexOf('node') + 1);
}

/**
 * The environment `npm start` sets before `exec node` (its `NAME=value` words), as the shell
 * reads them: `NAME=${NAME-default}` keeps a value `env` already has, even an empty one (how a
 * user turns the setting off); `${NAME:-default}` only a non-empty one. For the same callers as
 * npmStartArgs, so what the start script sets (the malloc settings) is measured too.
 */
export function npmStartEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const words = startScriptWords();
  const exec = words.indexOf('exec');
  const assignments: Record<string, string> = {};
  for (const word of words.slice(0, exec < 0 ? words.indexOf('node') : exec)) {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(word);
    if (match === null) throw new Error(`package.json's start script: "${word}" is not NAME=value before exec`);
    const [, name, value] = match;
    const withDefault = /^\$\{([A-Za-z_][A-Za-z0-9_]*)(:?)-(.*)\}$/.exec(value);
    if (withDefault === null) {
      assignments[name] = value;
      continue;
    }
    const [, from, colon, fallback] = withDefault;
    const given = env[from];
    assignments[name] = given === undefined || (colon === ':' && given === '') ? fallback : given;
  }
  return assignments;
}

export async function buildServer(): Promise<string> {
  await build({
    entryPoints: { server: SERVER_ENTRY, index: EMBEDDING_ENTRY, 'decoder-worker': WORKER_ENTRY, 'media-decode-worker': MEDIA_WORKER_ENTRY, 'tokenizer-thread-worker': TOKENIZER_WORKER_ENTRY, 'template-thread-worker': TEMPLATE_WORKER_ENTRY, 'guide-thread-worker': GUIDE_WORKER_ENTRY },
    outdir: `${ROOT}dist/node`,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'linked',
    // The file is also package.json's `bin` (edge-llm): run directly, it needs its interpreter line.
    banner: { js: '#!/usr/bin/env node' },
    logLevel: 'warning',
  });
  return SERVER_OUT_FILE;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = performance.now();
  buildServer()
    .then((file) => console.log(`Server built: ${file} in ${(performance.now() - started).toFixed(0)} ms`))
    .catch((error: unknown) => {
      console.error('Server build failed:', error instanceof Error ? error.message : error);
      process.exit(1);
    });
}
