/**
 * An embedding model in the page: a folder in the onnx-community / Optimum layout with
 * sentence-transformers' files (what `npm start` and the embedding Worker serve), read over
 * HTTP or from a picked folder, loaded by the same code as theirs (embeddings/load.ts) on
 * onnxruntime-web, and served by the same Hono app: the page's /v1/embeddings answers as the
 * server's does, with no server doing the inference.
 */
import type { Hono } from 'hono';
import { withPageBounds } from '../../config/bound-settings.js';
import { parseServerConfig, type ServerConfig } from '../../config/server-config.js';
import type { EmbeddingEngine } from '../../embeddings/embedding-engine.js';
import { readEmbeddingFolderJson } from '../../embeddings/folder.js';
import { loadEmbeddingEngine, looksLikeEmbeddingModel, type EmbeddingModelFiles } from '../../embeddings/load.js';
import { createApp } from '../../http/app.js';
import type { OnnxFileChoice, OnnxFileSettings } from '../../engine/loading/model-variants.js';
import type { OrtRuntime } from '../../onnx/ort-runtime.js';
import { embeddingServingOptions } from '../embedding-options.js';
import type { ProgressListener } from './downloads.js';
import type { BrowserBackend } from './engine.js';
import { chooseSourceGraph, externalDataOf, type ModelSource } from './model-source.js';

/** An embedding folder's files as the page read them: the graph's external data beside them. */
export interface BrowserEmbeddingFiles extends EmbeddingModelFiles {
  onnx: Uint8Array;
  externalData: Array<{ path: string; data: Uint8Array }>;
  /** The graph and its external data. */
  weightBytes: number;
}

function jsonReader(source: ModelSource, onProgress?: ProgressListener) {
  return async (path: string) => {
    const bytes = await source.read(path, onProgress);
    if (bytes === null) return undefined;
    try {
      return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
    } catch (error) {
      throw new Error(`${source.label}${path}: ${(error as Error).message}`);
    }
  };
}

/**
 * vLLM's `--runner auto` on a folder the page reads (embeddings/load.ts looksLikeEmbeddingModel):
 * sentence-transformers' modules.json, or an encoder family's config.json naming no generation head.
 */
export async function isEmbeddingSource(source: ModelSource): Promise<boolean> {
  // GETs (small files), not HEAD probes: the page's cache keeps them, 404s included, so an offline reload decides the same.
  const read = jsonReader(source);
  const [config, modules] = await Promise.all([read('config.json').catch(() => undefined), read('modules.json').catch(() => undefined)]);
  return config !== undefined && looksLikeEmbeddingModel(config, modules !== undefined);
}

/** Reads an embedding folder: its JSON files, the graph the settings choose and that graph's external data. */
export async function readEmbeddingSource(
  source: ModelSource,
  options: OnnxFileSettings & { onProgress?: ProgressListener; choice?: OnnxFileChoice } = {},
): Promise<BrowserEmbeddingFiles> {
  const choice = options.choice ?? (await chooseSourceGraph(source, options));
  const [json, onnx] = await Promise.all([readEmbeddingFolderJson(jsonReader(source, options.onProgress), source.label), source.read(choice.file, options.onProgress)]);
  if (onnx === null) throw new Error(`Cannot download ${source.label}${choice.file}: HTTP 404 Not Found`);
  const externalData = await externalDataOf(source, choice.file, onnx, options.onProgress);
  return { ...json, onnx, onnxFile: choice.file, externalData, weightBytes: externalData.reduce((sum, file) => sum + file.data.byteLength, onnx.byteLength) };
}

export interface BrowserEmbeddingAppOptions {
  /** An onnxruntime-web module (its `wasm` or `webgpu` build), already configured. */
  ort: OrtRuntime;
  backend?: BrowserBackend;
  files: EmbeddingModelFiles & { externalData?: Array<{ path: string; data: Uint8Array }> };
  servedModelName: string;
  /** Server settings, as in config.json (maxSeqLen, poolerConfig, the scheduler's limits). */
  config?: Record<string, unknown>;
  /** Lines leading the startup report (a GGUF's build). */
  notes?: string[];
}

export interface BrowserEmbeddingApp {
  kind: 'embeddings';
  app: Hono;
  engine: EmbeddingEngine;
  config: ServerConfig;
}

/** Loads the embedding model on onnxruntime-web and wraps it in the HTTP app (`app.fetch(request)` as one calls the server). */
export async function createBrowserEmbeddingApp(options: BrowserEmbeddingAppOptions): Promise<BrowserEmbeddingApp> {
  const config = parseServerConfig({ ...withPageBounds(options.config ?? {}), servedModelName: options.servedModelName });
  const { externalData, ...files } = options.files;
  const engine = await loadEmbeddingEngine({
    ort: options.ort,
    files,
    ...embeddingServingOptions(config),
    notes: options.notes,
    // The same graph optimisation as the generation engine in the page and the Node entry's wasm backend.
    sessionOptions: { executionProviders: [options.backend ?? 'wasm'], graphOptimizationLevel: 'all', ...(externalData?.length ? { externalData } : {}) },
  });
  return { kind: 'embeddings', app: createApp({ engine, embeddings: engine, config }), engine, config };
}
