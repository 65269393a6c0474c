/**
 * The playground page's script (bundled by scripts/build-playground.ts into
 * dist/playground/playground.js). It starts the UI of public/src and hands it the
 * in-page engine loader: the engine, Hono and onnxruntime-web are imported only when a
 * visitor first picks an in-page engine, so the page itself loads fast.
 *
 * The in-page engines are also reachable from the browser console as `edgeLlm`:
 * `await edgeLlm.app('webgpu')` is the page's own engine and app once it is loaded, and
 * `await edgeLlm.benchmark('webgpu')` measures it.
 */
import { startPlayground } from '../../../public/src/playground.js';
import { DownloadList } from '../../../public/src/downloads.js';
import type { InPageLoader } from '../../../public/src/targets.js';
import type { WebLlmCatalog } from '../../../public/src/webllm-panel.js';
import type { GgufPick } from '../../../public/src/gguf-panel.js';
import { libraryNeedsShaderF16, NO_WEBGPU_MESSAGE, webLlmProgressText } from './webllm-messages.js';
// Static, small: the benchmark must run when the server is gone and no chunk can load.
import { benchmarkEngine, type BenchmarkOptions, type BenchmarkResult } from './benchmark.js';
import type { FileProgress } from './downloads.js';
import type { BrowserApp, BrowserBackend } from './engine.js';
import type { BrowserEmbeddingApp } from './embedding-app.js';
import type { WebLlmApp, WebLlmAppOptions } from './webllm.js';
import { cachedBytes, cachingFetch, clearCache } from './cache.js';
import { forgetOfflinePage, keepPageOffline, pageKeptOffline } from './offline.js';
import { GGUF_WORKER_SCRIPT, WEBGPU_BUILD_META } from '../playground-files.js';
import { hasJspi, probeWebGpu, type WebGpuBuild } from './ort.js';
import { defaultSamplingParams } from '../../sampling/params.js';
import type { ModelDtype, OnnxFileSettings } from '../../engine/loading/model-variants.js';

/**
 * The page's in-page app, and what it runs on: a generation model (LocalEngine), or an
 * embedding model (`kind: 'embeddings'`, an EmbeddingEngine serving /v1/embeddings).
 */
export type InPageApp = ((BrowserApp & { kind: 'generation' }) | BrowserEmbeddingApp) & InPageRun;

interface InPageRun {
  backend: BrowserBackend;
  /** The startup report's lines, as `npm start` prints them (GGUF lines included). */
  report: string[];
  /** onnxruntime's WASM threads (the CPU part of WebGPU sessions too). */
  threads: number;
  runsOn: string;
}

/** Per backend, the app and the model it was made for (a picked GGUF replaces the folder's). */
const inPageApps = new Map<BrowserBackend, { key: string; app: Promise<InPageApp> }>();
/** The service worker's registration, started with the first in-page engine (browser-offline.ts). */
let pageOffline: Promise<void> | undefined;

/** How the page names a model for its app map: the folder, or the GGUF given. */
function modelKey(gguf: GgufPick | undefined): string {
  if (!gguf) return 'folder';
  return gguf.kind === 'url' ? `url:${gguf.url}` : `file:${gguf.file.name}:${gguf.file.size}:${gguf.file.lastModified}`;
}

/** `?ggufWeights=float32`: the GGUF's weights dequantized to float32 instead of kept quantized. */
function requestedGgufWeights(): 'quantized' | 'float32' | undefined {
  const value = new URL(document.URL).searchParams.get('ggufWeights');
  return value === 'float32' || value === 'quantized' ? value : undefined;
}

async function createInPageApp(backend: BrowserBackend, servedModelName: string, onStatus: (message: string) => void, gguf?: GgufPick): Promise<InPageApp> {
  onStatus(`loading onnxruntime-web (${backend === 'webgpu' ? 'WebGPU' : 'WebAssembly'})…`);
  const [{ createBrowserApp, fetchModelFiles }, { loadBrowserOrt, wasmThreadsFor }, { explainEngineError }, gpu, { chooseSourceGraph, urlModelSource }, { formatLoadReport }, embeddingApp] =
    await Promise.all([
      import('./engine.js'),
      import('./ort.js'),
      import('./errors.js'),
      import('./gpu.js'),
      import('./model-source.js'),
      import('../../engine/loading/load-report.js'),
      import('./embedding-app.js'),
    ]);
  const model = inPageModel(servedModelName);
  const downloads = new DownloadList();
  const fetchFile = cachingFetch();
  // Downloads run side by side: once one fails, the others' progress must not hide the error.
  let failed = false;
  const onProgress = (progress: FileProgress) => {
    if (failed) return;
    downloads.update(progress);
    onStatus(`${gguf ? 'reading' : 'downloading'} ${downloads.summary()}`);
  };
  try {
    const source = urlModelSource(model.baseUrl, fetchFile);
    // WebGPU: an fp16 / q4f16 variant on an adapter without shader-f16 is refused before
    // anything (the graph, onnxruntime's .wasm, the folder's files) is downloaded.
    let choice: Awaited<ReturnType<typeof chooseSourceGraph>> | undefined;
    if (backend === 'webgpu' && !gguf) {
      const [features, chosen] = await Promise.all([gpu.webGpuAdapterFeatures(), chooseSourceGraph(source, model.settings)]);
      if (features) await gpu.refuseVariantTheAdapterCannotRun(chosen, features, source);
      choice = chosen;
    }
    // An embedding folder (sentence-transformers' files, or an encoder's config) is served for
    // /v1/embeddings, as `npm start` serves it (runner auto).
    const embedding = !gguf && (await embeddingApp.isEmbeddingSource(source));
    const executedBy = `onnxruntime-web (${backend === 'webgpu' ? 'WebGPU; a node without a WebGPU kernel runs on its CPU kernels' : 'WebAssembly'})`;
    const runsOnFor = (threads: number, kvCacheOnGpu: boolean) =>
      backend === 'webgpu'
        ? `WebGPU${embedding ? '' : ` · KV cache ${kvCacheOnGpu ? 'on the GPU' : 'copied to the CPU'}`}`
        : `WebAssembly · ${threads === 1 ? '1 thread' : `${threads} threads`}`;
    // Now a reload without the server makes sense: keep the page itself too.
    const keepOffline = () => {
      pageOffline ??= keepPageOffline().then((error) => {
        if (error) console.warn('The page will need its server to reload:', error.message);
      });
    };
    const ortReady = loadBrowserOrt(backend, new URL('playground/ort/', document.baseURI).href, { fetch: fetchFile, onProgress, webGpuBuild: webGpuBuildHere() });
    /** An embedding model (a folder, or a GGUF made for llama.cpp's --embedding) served for /v1/embeddings. */
    const serveEmbeddings = async (
      { ort, setThreads }: Awaited<typeof ortReady>,
      files: Parameters<typeof embeddingApp.createBrowserEmbeddingApp>[0]['files'],
      name: string,
      notes: string[],
      config: Record<string, unknown>,
    ): Promise<InPageApp> => {
      const weightBytes = (files.externalData ?? []).reduce((sum, file) => sum + file.data.byteLength, (files.onnx as Uint8Array).byteLength);
      const threads = requestedThreads() ?? wasmThreadsFor(weightBytes);
      setThreads(threads);
      onStatus('starting the engine…');
      const app = await embeddingApp.createBrowserEmbeddingApp({ ort, backend, files, servedModelName: name, config, notes });
      keepOffline();
      const runsOn = runsOnFor(threads, false);
      return { ...app, backend, threads, runsOn, report: [`Runs on: ${runsOn}`, ...app.engine.notes] };
    };
    if (embedding) {
      const [ort, files] = await Promise.all([ortReady, embeddingApp.readEmbeddingSource(source, { ...model.settings, onProgress, choice })]);
      return await serveEmbeddings(ort, files, model.name, [], { ...model.settings });
    }
    // onnxruntime and the model download side by side; the thread count depends on the
    // model's size and must be set before the session is created.
    const [loaded, built] = await Promise.all([
      ortReady,
      gguf
        ? ggufFiles(gguf, fetchFile, onProgress, executedBy, backend === 'webgpu' ? 'fused' : 'inplace')
        : fetchModelFiles(model.baseUrl, { fetch: fetchFile, onProgress, ...model.settings, choice }).then((files) => ({ kind: 'generation' as const, files, name: model.name, notes: [] as string[] })),
    ]);
    if (built.kind === 'embeddings') return await serveEmbeddings(loaded, built.files, built.name, built.notes, {});
    const { ort, setThreads } = loaded;
    const { files, name, notes } = built;
    const threads = requestedThreads() ?? wasmThreadsFor(files.weightBytes ?? files.onnx.byteLength);
    setThreads(threads);
    onStatus('starting the engine…');
    const app = await createBrowserApp({
      ort,
      backend,
      files,
      servedModelName: name,
      config: gguf ? {} : { ...model.settings },
      // `?kv=cpu`: the KV cache through JavaScript every step, to compare with keeping it on the GPU.
      gpuKvCache: new URL(document.URL).searchParams.get('kv') !== 'cpu',
    });
    app.engine.loadReport.notes.unshift(...notes);
    const runsOn = runsOnFor(threads, app.kvCacheOnGpu);
    keepOffline();
    const { info, warnings } = formatLoadReport(app.engine.loadReport);
    return { ...app, kind: 'generation', backend, threads, runsOn, report: [`Runs on: ${runsOn}`, ...info, ...warnings.map((w) => `Warning: ${w}`)] };
  } catch (error) {
    failed = true;
    throw new Error(explainEngineError(error, backend), { cause: error });
  }
}

/**
 * A GGUF's model files, built in a Web Worker of the page (browser-gguf.ts): a picked file
 * is read where it lies, a URL is downloaded through the page's cache (as the model
 * folder's files are) and the downloaded Blob handed over.
 */
async function ggufFiles(gguf: GgufPick, fetchFile: typeof fetch, onProgress: (progress: FileProgress) => void, executedBy: string, ops: 'inplace' | 'fused') {
  const { buildGgufInWorker, downloadGguf, ggufNameOf } = await import('./gguf.js');
  const name = gguf.kind === 'file' ? gguf.file.name : ggufNameOf(gguf.url);
  const blob = gguf.kind === 'file' ? gguf.file : await downloadGguf(new URL(gguf.url, document.baseURI).href, fetchFile, onProgress);
  const workerUrl = new URL(`playground/${GGUF_WORKER_SCRIPT}`, document.baseURI);
  const built = await buildGgufInWorker(workerUrl, { blob, name, weights: requestedGgufWeights(), executedBy, ops }, onProgress);
  return { ...built, name };
}

/** `?threads=N` in the page's URL sets onnxruntime's WASM thread count (for measuring it). */
function requestedThreads(): number | undefined {
  const value = Number(new URL(document.URL).searchParams.get('threads') ?? NaN);
  return Number.isInteger(value) && value >= 1 ? value : undefined;
}

/**
 * One app per backend and model for the page's lifetime: a new GGUF replaces the app
 * (the old engine is disposed first, its weights freed); a failed load is forgotten so a retry can work.
 */
function inPageApp(backend: BrowserBackend, servedModelName: string, onStatus: (message: string) => void, gguf?: GgufPick): Promise<InPageApp> {
  const key = modelKey(gguf);
  const current = inPageApps.get(backend);
  if (current?.key === key) return current.app;
  const app = (async () => {
    await current?.app.then(({ engine }) => engine.dispose(), () => {});
    return createInPageApp(backend, servedModelName, onStatus, gguf);
  })();
  inPageApps.set(backend, { key, app });
  app.catch(() => {
    if (inPageApps.get(backend)?.app === app) inPageApps.delete(backend);
  });
  return app;
}

/**
 * The model the in-page engine loads: the server's (playground/model/), or the folder a
 * page URL names, e.g. ?model=https://host/org/model/resolve/main/&dtype=q4f16 (the
 * folder must allow cross-origin reads; the dtype / modelFile settings as in config.json).
 */
function inPageModel(servedModelName: string): { baseUrl: string; name: string; settings: OnnxFileSettings } {
  const query = new URLSearchParams(location.search);
  const settings: OnnxFileSettings = {};
  const dtype = query.get('dtype');
  const modelFile = query.get('modelFile');
  // An unknown dtype is reported by the file choice (model-variants.ts), naming the known ones.
  if (dtype) settings.dtype = dtype as ModelDtype;
  if (modelFile) settings.modelFile = modelFile;
  const model = query.get('model');
  if (!model) return { baseUrl: new URL('playground/model/', document.baseURI).href, name: servedModelName, settings };
  const baseUrl = new URL(model.endsWith('/') ? model : `${model}/`, document.baseURI).href;
  // Hugging Face URLs end in resolve/<revision>/: name the model by its repository.
  const parts = new URL(baseUrl).pathname.split('/').filter((part) => part !== '');
  const resolveAt = parts.lastIndexOf('resolve');
  const name = (resolveAt > 0 ? parts[resolveAt - 1] : parts.at(-1)) ?? servedModelName;
  return { baseUrl, name, settings };
}

/** The WebGPU build this page's home serves (its HTML says when it is not the default). */
function webGpuBuildHere(): WebGpuBuild {
  return document.querySelector<HTMLMetaElement>(`meta[name="${WEBGPU_BUILD_META}"]`)?.content === 'jspi' ? 'jspi' : 'asyncify';
}

/** Whether the WebGPU engine can run from this page, or why not. */
async function webGpuHere(): Promise<true | string> {
  if (webGpuBuildHere() === 'jspi' && !hasJspi()) {
    return (
      'This host serves onnxruntime’s smaller WebGPU build (a Cloudflare Worker’s files are capped at 25 MiB; the usual build is 26.8 MB), ' +
      'which needs WebAssembly JavaScript Promise Integration: Chromium 137 or later. Use In-page · WASM here, or the page from `npm start`.'
    );
  }
  return (await probeWebGpu()) ? true : 'No WebGPU adapter in this browser (no GPU, a blocked driver, or WebGPU turned off).';
}

const loadInPage: InPageLoader = async (backend, { servedModelName, onStatus, webllm, gguf }) => {
  if (backend === 'webllm') {
    if (!webllm) throw new Error('No web-llm model was picked.');
    onStatus(`loading web-llm for ${webllm.id}…`);
    const { app } = await inPageWebLlm({
      modelUrl: webllm.modelUrl,
      modelLibUrl: webllm.modelLibUrl,
      modelId: webllm.id,
      onProgress: (report) => onStatus(webLlmProgressText(report)),
    });
    return { fetch: (request) => app.fetch(request), details: 'web-llm · WebGPU' };
  }
  const { app, runsOn, report } = await inPageApp(backend, servedModelName, onStatus, gguf);
  return { fetch: (request) => app.fetch(request), details: runsOn, report };
};

/** web-llm's prebuilt model list and caches, imported with web-llm when first asked for. */
const webLlmCatalog: WebLlmCatalog = {
  available: probeWebGpu().then((found) => (found ? true : NO_WEBGPU_MESSAGE)),
  async prebuilt() {
    const { prebuiltAppConfig } = await import('@mlc-ai/web-llm');
    return prebuiltAppConfig.model_list
      .filter((record) => record.model_type === undefined || record.model_type === 0)
      .map((record) => ({
        id: record.model_id,
        modelUrl: record.model,
        modelLibUrl: record.model_lib,
        vramMB: record.vram_required_MB,
        f16: (record.required_features ?? []).includes('shader-f16') || libraryNeedsShaderF16(record.model_lib),
      }));
  },
  async cached(models) {
    const { webLlmCachedModel } = await import('./webllm.js');
    const found = await Promise.all(models.map((model) => webLlmCachedModel(model.id, model.modelUrl, model.modelLibUrl).catch(() => false)));
    return models.filter((_, i) => found[i]);
  },
  async remove(model) {
    const { deleteWebLlmModel } = await import('./webllm.js');
    await deleteWebLlmModel(model.id, model.modelUrl, model.modelLibUrl);
  },
};

export interface EdgeLlmConsole {
  /** The page's in-page app and engine for a backend, or null when it was not started. */
  app(backend?: BrowserBackend): Promise<InPageApp> | null;
  /** Median decode rate of a started in-page engine (greedy, EOS ignored). */
  benchmark(backend?: BrowserBackend, options?: BenchmarkOptions): Promise<BenchmarkResult>;
  /** Complete SamplingParams from overrides, for `engine.generate` from the console. */
  samplingParams: typeof defaultSamplingParams;
  /**
   * The page's web-llm app: loads an MLC model folder and its library the first time
   * (later calls return the same app while the model is the same).
   */
  webllm(options: WebLlmAppOptions): Promise<WebLlmApp>;
}

let webLlmApp: { key: string; app: Promise<WebLlmApp> } | undefined;

/** One web-llm app at a time (web-llm holds one model's weights on the GPU); a failed load is forgotten. */
function inPageWebLlm(options: WebLlmAppOptions): Promise<WebLlmApp> {
  const key = JSON.stringify([options.modelUrl, options.modelLibUrl, options.modelId ?? null]);
  if (webLlmApp?.key === key) return webLlmApp.app;
  const previous = webLlmApp?.app;
  const app = (async () => {
    await previous?.then(({ engine }) => engine.dispose(), () => {});
    const { createWebLlmApp } = await import('./webllm.js');
    return createWebLlmApp(options);
  })();
  webLlmApp = { key, app };
  app.catch(() => {
    if (webLlmApp?.app === app) webLlmApp = undefined;
  });
  return app;
}

const edgeLlm: EdgeLlmConsole = {
  app: (backend = 'wasm') => inPageApps.get(backend)?.app ?? null,
  async benchmark(backend = 'wasm', options) {
    const app = inPageApps.get(backend)?.app;
    if (!app) throw new Error(`the ${backend} engine is not started: pick it in the page first`);
    const started = await app;
    if (started.kind === 'embeddings') throw new Error('The benchmark measures generation; this engine serves an embedding model.');
    return benchmarkEngine(started.engine, options);
  },
  samplingParams: defaultSamplingParams,
  webllm: inPageWebLlm,
};
(globalThis as { edgeLlm?: EdgeLlmConsole }).edgeLlm = edgeLlm;

startPlayground({
  loadInPage,
  benchmark: (backend, options) =>
    backend === 'webllm' ? Promise.reject(new Error('The benchmark measures the onnxruntime engines.')) : edgeLlm.benchmark(backend, options),
  cache: {
    async size() {
      await pageOffline;
      const [engineFiles, page] = await Promise.all([cachedBytes(), pageKeptOffline()]);
      return { ...engineFiles, page };
    },
    async clear() {
      await pageOffline;
      pageOffline = undefined;
      await Promise.all([clearCache(), forgetOfflinePage()]);
    },
  },
  webGpuAvailable: webGpuHere(),
  webllm: webLlmCatalog,
  storage: (() => {
    try {
      return window.localStorage;
    } catch {
      return undefined; // Storage disabled: nothing is remembered.
    }
  })(),
});
