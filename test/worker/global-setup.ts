/**
 * Runs in Node before the workerd tests: the real Node server (onnxruntime-node, the
 * same app as `npm start`) on a free loopback port, for the Worker to delegate to and
 * for the tests to compare against (structured output included, as `npm start` has it).
 * `/__test/stats` reports its engine's counters so a test can see that a cancelled
 * stream stopped generation upstream.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import type { TestProject } from 'vitest/node';
import { parseServerConfig } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { nodeGuideCompiler } from '../../src/runtime/node/guides.js';
import { extractXGrammarWasm } from '../../scripts/extract-xgrammar-wasm.js';
import { buildWorkerAssets } from '../../scripts/build-worker-assets.js';
import { MODEL_DIR } from '../helpers/model.js';
import { startHungUpstream } from './hung-upstream.js';
import { startLlamaServer } from './llama-server.js';

/** What test/worker/ort-wasm-binding.ts compiles in place of the pool's slow .wasm import. */
const ORT_WASM_PATH = createRequire(import.meta.url).resolve('onnxruntime-web/ort-wasm-simd-threaded.wasm');

declare module 'vitest' {
  export interface ProvidedContext {
    nodeServerUrl: string;
    /** The Node server on test/fixtures/gguf/tiny-llama-kquants.gguf (MODEL_DIR=file.gguf), for the GGUF Worker. */
    ggufNodeServerUrl: string;
    /** llama.cpp's server (llama-server.ts), or '' with llamaServerError saying why not. */
    llamaServerUrl: string;
    llamaServerError: string;
    /** A loopback port nothing listens on: an upstream that is down. */
    closedPortUrl: string;
    /** A loopback server that accepts and never answers, or stops mid-stream (hung-upstream.ts). */
    hungUpstreamUrl: string;
  }
}

async function closedPort(): Promise<string> {
  const server = createServer();
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // What wrangler's [build] command does before `wrangler dev`: the Worker imports
  // dist/xgrammar.wasm, and wrangler.toml's [assets] folder must exist.
  await Promise.all([extractXGrammarWasm(), buildWorkerAssets()]);
  const config = parseServerConfig({ modelDir: MODEL_DIR, servedModelName: 'stories260k', port: 0 });
  const engine = await createNodeEngine({ modelDir: config.modelDir, servedModelName: config.servedModelName });
  const app = createApp({ engine, config, guideCompiler: nodeGuideCompiler(engine) });
  const withStats = new Hono();
  withStats.get('/__test/stats', (c) => c.json(engine.stats()));
  withStats.get('/__test/ort-wasm', async () => new Response(await readFile(ORT_WASM_PATH)));
  withStats.all('*', (c) => app.fetch(c.req.raw));
  let server: ServerType | undefined;
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: withStats.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => resolve(info.port));
  });
  project.provide('nodeServerUrl', `http://127.0.0.1:${port}`);
  const gguf = await serveGguf();
  project.provide('ggufNodeServerUrl', gguf.url);
  const llama = await startLlamaServer();
  project.provide('llamaServerUrl', 'url' in llama ? llama.url : '');
  project.provide('llamaServerError', 'error' in llama ? llama.error : '');
  project.provide('closedPortUrl', await closedPort());
  const hung = await startHungUpstream();
  project.provide('hungUpstreamUrl', hung.url);
  return async () => {
    if ('stop' in llama) await llama.stop();
    await hung.stop();
    await new Promise<void>((resolve) => {
      server!.close(() => resolve());
      if ('closeAllConnections' in server!) server!.closeAllConnections();
    });
    await gguf.stop();
    await engine.dispose();
  };
}

/** The fixture GGUF Worker tests compare with. */
export const WORKER_GGUF_FIXTURE = 'tiny-llama-kquants.gguf';

/** What `MODEL_DIR=…/tiny-llama-kquants.gguf npm start` serves (its graph in the GGUF cache), on a free port. */
async function serveGguf(): Promise<{ url: string; stop(): Promise<void> }> {
  const modelDir = fileURLToPath(new URL(`../fixtures/gguf/${WORKER_GGUF_FIXTURE}`, import.meta.url));
  const config = parseServerConfig({ modelDir, servedModelName: WORKER_GGUF_FIXTURE, port: 0 });
  // The graph Node builds for the file goes to a scratch cache (as the e2e tests' servers'), not the user's.
  const cacheDir = await mkdtemp(join(tmpdir(), 'workerd-gguf-'));
  const previous = process.env.GGUF_CACHE_DIR;
  process.env.GGUF_CACHE_DIR = cacheDir;
  let engine: Awaited<ReturnType<typeof createNodeEngine>>;
  try {
    engine = await createNodeEngine({ modelDir, servedModelName: config.servedModelName });
  } finally {
    if (previous === undefined) delete process.env.GGUF_CACHE_DIR;
    else process.env.GGUF_CACHE_DIR = previous;
  }
  const app = createApp({ engine, config });
  let server: ServerType | undefined;
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => resolve(info.port));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      await new Promise<void>((resolve) => {
        server!.close(() => resolve());
        if ('closeAllConnections' in server!) server!.closeAllConnections();
      });
      await engine.dispose();
      await rm(cacheDir, { recursive: true, force: true });
    },
  };
}
