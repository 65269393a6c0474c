/**
 * The runtime's "third home": the same Hono app and the same LocalEngine that `npm start`
 * serves, running inside a web page on onnxruntime-web. The page calls
 * `app.fetch(new Request(...))` instead of the network, so it talks to an identical API
 * (validation, sampling, streaming, error bodies) with no server doing the inference.
 */
import type { Hono } from 'hono';
import { parseServerConfig, schedulerLimitsOf, type ServerConfig } from '../config/server-config.js';
import { LocalEngine } from '../engine/local-engine.js';
import { fetchAdapterReader } from '../adapters/fetch-reader.js';
import { loraOptionsOf } from './lora-options.js';
import type { ModelFiles } from '../engine/model-files.js';
import type { OnnxFileSettings } from '../engine/model-variants.js';
import type { InferenceSession, OrtRuntime } from '../engine/ort-runtime.js';
import { createApp } from '../http/app.js';
import { readModelSource, urlModelSource, type ModelSource } from './model-source.js';

/** The execution providers the page offers. WASM is the default and the tested one. */
export type BrowserBackend = 'wasm' | 'webgpu';

export interface BrowserAppOptions {
  /** An onnxruntime-web module (its `wasm` or `webgpu` build), already configured. */
  ort: OrtRuntime;
  backend?: BrowserBackend;
  /** URL of the model directory (Hugging Face ONNX layout), ending with a slash. */
  modelBaseUrl: string;
  /** Another folder to read the model from (one the user picked in the page); wins over modelBaseUrl. */
  modelSource?: ModelSource;
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

/**
 * Downloads a model directory's files over HTTP (the page's counterpart of
 * runtime/model-dir.ts): the graph variant the settings choose, and its external data.
 */
export async function fetchModelFiles(
  baseUrl: string,
  options: OnnxFileSettings & { fetch?: typeof fetch; onProgress?: (loadedBytes: number) => void } = {},
): Promise<ModelFiles> {
  return readModelSource(urlModelSource(baseUrl, options.fetch), options);
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
  const files = await readModelSource(options.modelSource ?? urlModelSource(options.modelBaseUrl, options.fetch), {
    dtype: config.dtype,
    modelFile: config.modelFile,
    onProgress: options.onProgress,
  });
  const engine = await LocalEngine.create({
    ort: options.ort,
    files,
    servedModelName: config.servedModelName,
    sessionOptions: sessionOptions(options.backend ?? 'wasm'),
    limits: schedulerLimitsOf(config),
    // Adapter paths are URLs, relative to the model's (e.g. "story=../adapters/story/").
    lora: loraOptionsOf(config, fetchAdapterReader(options.fetch ?? globalThis.fetch.bind(globalThis), options.modelBaseUrl)),
  });
  return { app: createApp({ engine, config }), engine, config };
}
