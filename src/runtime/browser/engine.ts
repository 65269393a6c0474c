/**
 * The runtime's "third home": the same Hono app and the same LocalEngine that `npm start`
 * serves, running inside a web page on onnxruntime-web. The page calls
 * `app.fetch(new Request(...))` instead of the network, so it talks to an identical API
 * (validation, sampling, streaming, error bodies) with no server doing the inference.
 */
import type { Hono } from 'hono';
import { withPageBounds } from '../../config/bound-settings.js';
import { parseServerConfig, schedulerLimitsOf, type ServerConfig } from '../../config/server-config.js';
import { GpuKvStore, type GpuDeviceLike } from '../../engine/kv/gpu-kv-cache.js';
import { LocalEngine } from '../../engine/local-engine.js';
import { fetchAdapterReader } from '../../adapters/fetch-reader.js';
import { loraOptionsOf } from '../lora-options.js';
import type { ModelFiles } from '../../onnx/model-files.js';
import type { OnnxFileChoice, OnnxFileSettings } from '../../engine/loading/model-variants.js';
import type { InferenceSession, OrtRuntime } from '../../onnx/ort-runtime.js';
import { createApp } from '../../http/app.js';
import type { ProgressListener } from './downloads.js';
import { chooseSourceGraph, readModelSource, urlModelSource, type ModelSource } from './model-source.js';
import { refuseVariantTheAdapterCannotRun, webGpuAdapterFeatures } from './gpu.js';

/** The execution providers the page offers. WASM is the default and the tested one. */
export type BrowserBackend = 'wasm' | 'webgpu';

export interface BrowserAppOptions {
  /** An onnxruntime-web module (its `wasm` or `webgpu` build), already configured. */
  ort: OrtRuntime;
  backend?: BrowserBackend;
  /** URL of the model directory (Hugging Face ONNX layout), ending with a slash. */
  modelBaseUrl?: string;
  /** Another folder to read the model from (one the user picked in the page); wins over modelBaseUrl. */
  modelSource?: ModelSource;
  /** The model's files, already read (fetchModelFiles); then neither of the above is used. */
  files?: ModelFiles;
  /** Name the model is served under; the server's default is the model directory's name. */
  servedModelName: string;
  /** Server settings, as in config.json; the defaults match `npm start` without a config file. */
  config?: Record<string, unknown>;
  /** For tests and custom loaders; defaults to the page's fetch. */
  fetch?: typeof fetch;
  /** Reports download progress, per model file. */
  onProgress?: ProgressListener;
  /**
   * WebGPU: keep the KV cache in GPU buffers between steps (the default). false copies it
   * to JavaScript and back every step, as the WASM backend does: for comparing the two.
   */
  gpuKvCache?: boolean;
  /**
   * WebGPU: the adapter's features, which decide whether an fp16 / q4f16 variant can run
   * (browser-gpu.ts); defaults to the page's default adapter's. Checked before the model is
   * downloaded; not used when `files` are given.
   */
  adapterFeatures?: ReadonlySet<string> | null;
}

export interface BrowserApp {
  app: Hono;
  /** WebGPU with the KV cache kept in GPU buffers. */
  kvCacheOnGpu: boolean;
  /** That cache's store (undefined otherwise), for inspecting it. */
  gpuKv?: GpuKvStore;
  engine: LocalEngine;
  config: ServerConfig;
}

/**
 * Downloads a model directory's files over HTTP (the page's counterpart of
 * runtime/node/model-dir.ts): the graph variant the settings choose, and its external data.
 */
export async function fetchModelFiles(
  baseUrl: string,
  options: OnnxFileSettings & { fetch?: typeof fetch; onProgress?: ProgressListener; choice?: OnnxFileChoice } = {},
): Promise<ModelFiles> {
  return readModelSource(urlModelSource(baseUrl, options.fetch), options);
}

/** Reads the model from its source; on WebGPU a variant the adapter cannot run is refused first. */
async function readModelFor(backend: BrowserBackend, options: BrowserAppOptions, settings: OnnxFileSettings): Promise<ModelFiles> {
  const source = options.modelSource ?? urlModelSource(options.modelBaseUrl!, options.fetch);
  const choice = await chooseSourceGraph(source, settings);
  if (backend === 'webgpu') {
    const features = options.adapterFeatures === undefined ? await webGpuAdapterFeatures() : options.adapterFeatures;
    if (features) await refuseVariantTheAdapterCannotRun(choice, features, source);
  }
  return readModelSource(source, { ...settings, choice, onProgress: options.onProgress });
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
  const config = parseServerConfig({ ...withPageBounds(options.config ?? {}), servedModelName: options.servedModelName });
  if (!options.files && !options.modelSource && options.modelBaseUrl === undefined) {
    throw new Error('createBrowserApp needs the model: modelBaseUrl, modelSource or files');
  }
  const backend = options.backend ?? 'wasm';
  const files = options.files ?? (await readModelFor(backend, options, { dtype: config.dtype, modelFile: config.modelFile }));
  const gpuKv = backend === 'webgpu' && options.gpuKvCache !== false ? new GpuKvStore(options.ort) : undefined;
  const engine = await LocalEngine.create({
    ort: options.ort,
    files,
    servedModelName: config.servedModelName,
    sessionOptions: sessionOptions(backend),
    limits: schedulerLimitsOf(config),
    gpuKv,
    // Adapter paths are URLs, relative to the model's (e.g. "story=../adapters/story/").
    lora: loraOptionsOf(config, fetchAdapterReader(options.fetch ?? globalThis.fetch.bind(globalThis), options.modelBaseUrl)),
  });
  if (gpuKv) {
    // The device onnxruntime-web's WebGPU backend made when the session was created.
    const device = await (options.ort as unknown as { env?: { webgpu?: { device?: Promise<GpuDeviceLike> | GpuDeviceLike } } }).env?.webgpu?.device;
    if (!device) {
      await engine.dispose();
      throw new Error('onnxruntime-web created no WebGPU device for the session');
    }
    gpuKv.attach(device);
  }
  return { app: createApp({ engine, config }), engine, config, kvCacheOnGpu: gpuKv !== undefined, gpuKv };
}
