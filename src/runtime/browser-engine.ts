/**
 * The runtime's "third home": the same Hono app and the same LocalEngine that `npm start`
 * serves, running inside a web page on onnxruntime-web. The page calls
 * `app.fetch(new Request(...))` instead of the network, so it talks to an identical API
 * (validation, sampling, streaming, error bodies) with no server doing the inference.
 */
import type { Hono } from 'hono';
import { parseServerConfig, schedulerLimitsOf, type ServerConfig } from '../config/server-config.js';
import { LocalEngine } from '../engine/local-engine.js';
import { MODEL_FILE_PATHS, type ModelFiles } from '../engine/model-files.js';
import type { InferenceSession, OrtRuntime } from '../engine/ort-runtime.js';
import { createApp } from '../http/app.js';
import { concatChunks } from '../media/body-reader.js';

/** The execution providers the page offers. WASM is the default and the tested one. */
export type BrowserBackend = 'wasm' | 'webgpu';

export interface BrowserAppOptions {
  /** An onnxruntime-web module (its `wasm` or `webgpu` build), already configured. */
  ort: OrtRuntime;
  backend?: BrowserBackend;
  /** URL of the model directory (Hugging Face ONNX layout), ending with a slash. */
  modelBaseUrl: string;
  /** Name the model is served under; the server's default is the model directory's name. */
  servedModelName: string;
  /** Server settings, as in config.json; the defaults match `npm start` without a config file. */
  config?: Record<string, unknown>;
  /** For tests and custom loaders; defaults to the page's fetch. */
  fetch?: typeof fetch;
  /** Reports download progress of the model files, in bytes over all files. */
  onProgress?: (loadedBytes: number) => void;
}

export interface BrowserApp {
  app: Hono;
  engine: LocalEngine;
  config: ServerConfig;
}

async function fetchOk(fetchFn: typeof fetch, url: string): Promise<Response> {
  let response: Response;
  try {
    response = await fetchFn(url);
  } catch (error) {
    throw new Error(`Cannot download ${url}: ${(error as Error).message}`);
  }
  if (!response.ok) throw new Error(`Cannot download ${url}: HTTP ${response.status} ${response.statusText}`.trim());
  return response;
}

/** Reads a body to the end, reporting each chunk's size as it arrives. */
async function readBytes(response: Response, onChunk: (bytes: number) => void): Promise<Uint8Array> {
  if (!response.body) return new Uint8Array(await response.arrayBuffer());
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    total += value.byteLength;
    onChunk(value.byteLength);
  }
  return concatChunks(chunks, total);
}

/** Downloads a model directory's files over HTTP (the page's counterpart of runtime/model-dir.ts). */
export async function fetchModelFiles(
  baseUrl: string,
  options: { fetch?: typeof fetch; onProgress?: (loadedBytes: number) => void } = {},
): Promise<ModelFiles> {
  const fetchFn = options.fetch ?? globalThis.fetch.bind(globalThis);
  const base = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
  let loaded = 0;
  const progress = (bytes: number) => {
    loaded += bytes;
    options.onProgress?.(loaded);
  };
  const json = async (path: string) => (await (await fetchOk(fetchFn, base + path)).json()) as Record<string, unknown>;
  const optionalJson = async (path: string) => {
    const response = await fetchFn(base + path);
    if (response.status === 404) return undefined;
    if (!response.ok) throw new Error(`Cannot download ${base + path}: HTTP ${response.status}`);
    return (await response.json()) as Record<string, unknown>;
  };
  const [config, generationConfig, tokenizerJson, tokenizerConfig, onnx] = await Promise.all([
    json(MODEL_FILE_PATHS.config),
    optionalJson(MODEL_FILE_PATHS.generationConfig),
    json(MODEL_FILE_PATHS.tokenizerJson),
    json(MODEL_FILE_PATHS.tokenizerConfig),
    fetchOk(fetchFn, base + MODEL_FILE_PATHS.onnx).then((response) => readBytes(response, progress)),
  ]);
  return { config, generationConfig, tokenizerJson, tokenizerConfig, onnx };
}

function sessionOptions(backend: BrowserBackend): InferenceSession.SessionOptions {
  // Same graph optimisation as the Node entry's wasm backend, so both run the same kernels.
  return { executionProviders: [backend], graphOptimizationLevel: 'all' };
}

/**
 * Loads the model, starts a LocalEngine on onnxruntime-web and wraps it in the HTTP app.
 * Call `app.fetch(new Request(url, init))` exactly as one would call the server.
 */
export async function createBrowserApp(options: BrowserAppOptions): Promise<BrowserApp> {
  const config = parseServerConfig({ ...options.config, servedModelName: options.servedModelName });
  const files = await fetchModelFiles(options.modelBaseUrl, { fetch: options.fetch, onProgress: options.onProgress });
  const engine = await LocalEngine.create({
    ort: options.ort,
    files,
    servedModelName: config.servedModelName,
    sessionOptions: sessionOptions(options.backend ?? 'wasm'),
    limits: schedulerLimitsOf(config),
  });
  return { app: createApp({ engine, config }), engine, config };
}
