/**
 * The browser home on @mlc-ai/web-llm: an MLC model folder (mlc-ai/*-MLC on the Hugging
 * Face hub, or any host that serves one) and its compiled model library run on WebGPU,
 * behind the same Hono app as the other in-page engines (engine/webllm/). web-llm keeps
 * the weights and the library in Cache Storage, so a reload loads them without the network.
 */
import type { Hono } from 'hono';
import { withPageBounds } from '../../config/bound-settings.js';
import { parseServerConfig, type ServerConfig } from '../../config/server-config.js';
import { forwardingGuideCompiler } from '../../engine/remote/guides.js';
import { WebLlmEngine, type MlcEngineInternals, type MlcModelFiles } from '../../engine/webllm/webllm-engine.js';
import { createApp } from '../../http/app.js';
import { cachingFetch, PLAYGROUND_CACHE } from './cache.js';
import { SHADER_F16, webGpuAdapterFeatures } from './gpu.js';
import { libraryNeedsShaderF16, NO_WEBGPU_MESSAGE, type WebLlmProgress } from './webllm-messages.js';


/** "Loading model from cache[3/9]: …" → 3 of 9. */
export function shardCount(text: string): WebLlmProgress['shards'] {
  const match = /\[(\d+)\/(\d+)\]/.exec(text);
  return match ? { done: Number(match[1]), of: Number(match[2]) } : undefined;
}

/** The phase a web-llm progress text names (web-llm 0.2.79's wording). */
export function webLlmPhase(text: string): WebLlmProgress['phase'] {
  if (text.startsWith('Fetching param cache') || text.startsWith('Start to fetch params')) return 'download';
  if (text.startsWith('Loading model from cache')) return 'gpu';
  return 'other';
}

export interface WebLlmAppOptions {
  /**
   * The model folder as web-llm takes it: a hub repository URL (…/mlc-ai/Model-MLC) or
   * any base under which `resolve/main/` holds the folder's files.
   */
  modelUrl: string;
  /** The compiled model library (.wasm) for this model and web-llm's library version. */
  modelLibUrl: string;
  /** The id web-llm caches the model under; defaults to the folder's name. */
  modelId?: string;
  /** Defaults to the model id. */
  servedModelName?: string;
  /** Server settings, as in config.json. */
  config?: Record<string, unknown>;
  onProgress?: (report: WebLlmProgress) => void;
  /** The adapter's features (tests); defaults to the page's default adapter's. */
  adapterFeatures?: ReadonlySet<string> | null;
}

export interface WebLlmApp {
  app: Hono;
  engine: WebLlmEngine;
  config: ServerConfig;
  modelId: string;
}

/** Thrown when this browser cannot run the library; its message is meant for the page as it is. */
export class WebLlmUnavailableError extends Error {
  override name = 'WebLlmUnavailableError';
}

export { libraryNeedsShaderF16, NO_WEBGPU_MESSAGE };


/** Why this adapter cannot run the library, or null when it can. */
export function webLlmAdapterRefusal(features: ReadonlySet<string> | null, modelLibUrl: string): string | null {
  if (features === null) return NO_WEBGPU_MESSAGE;
  if (libraryNeedsShaderF16(modelLibUrl) && !features.has(SHADER_F16)) {
    return (
      `This GPU adapter lacks the WebGPU feature "${SHADER_F16}", which the model library ${modelLibUrl} needs (it computes in float16). ` +
      'Pick a q4f32 / q0f32 build of the model (e.g. …-q4f32_1-MLC), or “In-page · WASM”. Nothing of the model was downloaded.'
    );
  }
  return null;
}

/** The folder's files under web-llm's spelling of its address. */
export function mlcFileUrl(modelUrl: string, file: string): string {
  const base = modelUrl.endsWith('/') ? modelUrl : `${modelUrl}/`;
  return new URL(`resolve/main/${file}`, base).href;
}

/** The name web-llm would give the folder: the repository's (last path part). */
export function mlcModelId(modelUrl: string): string {
  return new URL(modelUrl).pathname.split('/').filter((part) => part !== '').at(-1) ?? 'web-llm-model';
}

async function fetchJson(fetchFn: typeof fetch, url: string, optional: boolean): Promise<Record<string, unknown>> {
  const response = await fetchFn(url);
  if (!response.ok) {
    if (optional && response.status === 404) return {};
    throw new Error(`Cannot read ${url}: HTTP ${response.status}`);
  }
  return (await response.json()) as Record<string, unknown>;
}

/** The bytes of the weights' shards an ndarray-cache.json lists. */
export function mlcWeightsBytes(ndarrayCache: Record<string, unknown>): number {
  const shards = Array.isArray(ndarrayCache.records) ? (ndarrayCache.records as Array<{ nbytes?: unknown }>) : [];
  return shards.reduce((sum, shard) => sum + (typeof shard.nbytes === 'number' ? shard.nbytes : 0), 0);
}

/** mlc-chat-config.json and the tokenizer's files, which the HTTP layer needs, and the weights' size. */
export async function fetchMlcModelFiles(modelUrl: string, fetchFn: typeof fetch = cachingFetch()): Promise<MlcModelFiles & { weightsBytes: number }> {
  const [chatConfig, tokenizerJson, tokenizerConfig, ndarrayCache] = await Promise.all([
    fetchJson(fetchFn, mlcFileUrl(modelUrl, 'mlc-chat-config.json'), false),
    fetchJson(fetchFn, mlcFileUrl(modelUrl, 'tokenizer.json'), false),
    fetchJson(fetchFn, mlcFileUrl(modelUrl, 'tokenizer_config.json'), true),
    fetchJson(fetchFn, mlcFileUrl(modelUrl, 'ndarray-cache.json'), false),
  ]);
  return { chatConfig, tokenizerJson, tokenizerConfig, weightsBytes: mlcWeightsBytes(ndarrayCache) };
}

/** Why the folder's files could not be read, in words for the page (offline is the usual cause). */
function folderUnreadable(modelUrl: string, error: unknown): Error {
  const offline = typeof navigator !== 'undefined' && navigator.onLine === false;
  return new Error(
    `Cannot read the model folder ${modelUrl}: ${(error as Error).message}. ` +
      `${offline ? 'The browser is offline: ' : 'Without the network, '}only models web-llm has cached (listed under the model choice) and models served by this host can load.`,
  );
}

/**
 * Loads the model into web-llm (downloading what Cache Storage lacks) and wraps it in the
 * HTTP app. Call `app.fetch(new Request(url, init))` as one would call the server.
 */
export async function createWebLlmApp(options: WebLlmAppOptions): Promise<WebLlmApp> {
  const features = options.adapterFeatures === undefined ? await webGpuAdapterFeatures() : options.adapterFeatures;
  const refusal = webLlmAdapterRefusal(features, options.modelLibUrl);
  if (refusal !== null) throw new WebLlmUnavailableError(refusal);
  const modelId = options.modelId ?? mlcModelId(options.modelUrl);
  const config = parseServerConfig({ ...withPageBounds(options.config ?? {}), servedModelName: options.servedModelName ?? modelId });
  const [webllm, files] = await Promise.all([
    import('@mlc-ai/web-llm'),
    fetchMlcModelFiles(options.modelUrl).catch((error: unknown) => {
      throw folderUnreadable(options.modelUrl, error);
    }),
  ]);
  const onProgress = options.onProgress;
  const mlc = await webllm.CreateMLCEngine(modelId, {
    appConfig: { model_list: [{ model: options.modelUrl, model_id: modelId, model_lib: options.modelLibUrl }] },
    initProgressCallback:
      onProgress &&
      ((report) => {
        const phase = webLlmPhase(report.text);
        onProgress({ ...report, phase, totalBytes: files.weightsBytes, ...(phase === 'gpu' ? { shards: shardCount(report.text) } : {}) });
      }),
    logLevel: 'WARN',
  });
  const engine = new WebLlmEngine({
    mlc: mlc as unknown as MlcEngineInternals,
    modelId,
    files,
    servedModelName: config.servedModelName,
  });
  return { app: createApp({ engine, config, guideCompiler: forwardingGuideCompiler }), engine, config, modelId };
}

/** web-llm's caches of one model (weights, config, library), for listing and deleting them. */
export async function webLlmCachedModel(modelId: string, modelUrl: string, modelLibUrl: string): Promise<boolean> {
  const webllm = await import('@mlc-ai/web-llm');
  return webllm.hasModelInCache(modelId, { model_list: [{ model: modelUrl, model_id: modelId, model_lib: modelLibUrl }] });
}

/** The folder's files this page reads itself (fetchMlcModelFiles), kept in the page's cache beside web-llm's. */
const PAGE_READ_FILES = ['mlc-chat-config.json', 'tokenizer.json', 'tokenizer_config.json', 'ndarray-cache.json'];

/** Deletes the model from web-llm's caches (weights, config, library, its index) and the page's copies of its small files. */
export async function deleteWebLlmModel(modelId: string, modelUrl: string, modelLibUrl: string): Promise<void> {
  const webllm = await import('@mlc-ai/web-llm');
  await webllm.deleteModelAllInfoInCache(modelId, { model_list: [{ model: modelUrl, model_id: modelId, model_lib: modelLibUrl }] });
  // web-llm 0.2.79 leaves the folder's ndarray-cache.json behind in its own cache (seen in the e2e).
  const names = (await caches.keys()).filter((name) => name === PLAYGROUND_CACHE || name.startsWith('webllm/'));
  for (const name of names) {
    const cache = await caches.open(name);
    await Promise.all(PAGE_READ_FILES.map((file) => cache.delete(mlcFileUrl(modelUrl, file))));
  }
}
