/**
 * An embedding model folder under Node: the onnx-community / Optimum layout (config.json,
 * tokenizer.json, tokenizer_config.json, onnx/model*.onnx) with sentence-transformers' files
 * beside it (modules.json, its modules' config.json, config_sentence_transformers.json,
 * sentence_bert_config.json), read from disk and served by onnxruntime-node.
 */
import { readdir, readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { loadOnnxruntimeNode } from '../../onnx/ort-native.js';
import { chooseOnnxFile, type ModelDtype } from '../../engine/loading/model-variants.js';
import type { EmbeddingEngine, EmbeddingEngineLimits } from '../../embeddings/embedding-engine.js';
import { loadEmbeddingEngine, looksLikeEmbeddingModel, type EmbeddingModelFiles } from '../../embeddings/load.js';
import type { PoolerOverride } from '../../embeddings/pooling-config.js';
import { ggufEmbeddingFiles } from '../../embeddings/gguf-embedding.js';
import { ggufPoolingType } from '../../gguf/embedding-gguf.js';
import { readGguf } from '../../gguf/gguf-file.js';
import { ggufGraphOptionsFromEnv, isGgufPath, withFileSource } from '../../gguf/node-gguf.js';
import { readEmbeddingFolderJson } from '../../embeddings/folder.js';

async function readJsonIfPresent(path: string): Promise<Record<string, unknown> | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`${basename(path)}: ${(error as Error).message}`);
  }
}

async function listing(dir: string): Promise<string[]> {
  const top = await readdir(dir);
  const onnx = await readdir(join(dir, 'onnx')).catch(() => [] as string[]);
  return [...top, ...onnx.map((name) => `onnx/${name}`)];
}

/** vLLM's `--runner auto` on a folder: whether it holds an embedding model (embeddings/load.ts looksLikeEmbeddingModel). */
export async function isEmbeddingModelDir(dir: string): Promise<boolean> {
  const config = await readJsonIfPresent(join(dir, 'config.json')).catch(() => undefined);
  if (config === undefined) return false;
  const modules = await readJsonIfPresent(join(dir, 'modules.json')).catch(() => undefined);
  return looksLikeEmbeddingModel(config, modules !== undefined);
}

/** Reads an embedding model folder (module configs by the paths modules.json names). */
export async function readEmbeddingModelDir(dir: string, settings: { dtype?: ModelDtype; modelFile?: string }): Promise<EmbeddingModelFiles> {
  const files = await listing(dir);
  const choice = chooseOnnxFile(files, settings, 'the model folder');
  const json = await readEmbeddingFolderJson((name) => readJsonIfPresent(join(dir, name)));
  return {
    ...json,
    onnx: join(dir, choice.file),
    onnxFile: choice.file,
  };
}

export interface NodeEmbeddingEngineOptions {
  modelDir: string;
  servedModelName?: string;
  dtype?: ModelDtype;
  modelFile?: string;
  limits: EmbeddingEngineLimits;
  maxSeqLen?: number | null;
  poolerOverride?: PoolerOverride;
  /** onnxruntime's threads per model call; "auto": the cores (an embedding call is one big batch). */
  intraOpNumThreads?: number | 'auto';
}

/** A GGUF file served for embeddings: its header sets a pooling type (llama.cpp's --embedding files); RANK (a reranker) is not. */
export async function isEmbeddingGguf(path: string): Promise<boolean> {
  try {
    const pooling = await withFileSource(resolve(path), async (source) => ggufPoolingType(await readGguf(source)));
    return pooling !== null && pooling !== 'RANK';
  } catch (error) {
    // The first read of the file at startup: its failure is reported as every GGUF load's is.
    throw new Error(`Cannot load the GGUF "${path}": ${(error as Error).message}`, { cause: error });
  }
}

export async function createNodeEmbeddingEngine(options: NodeEmbeddingEngineOptions): Promise<EmbeddingEngine> {
  const dir = resolve(options.modelDir);
  let files: EmbeddingModelFiles;
  let notes: string[] = [];
  try {
    if (isGgufPath(dir)) ({ files, notes } = await withFileSource(dir, (source) => ggufEmbeddingFiles(source, { name: basename(dir), graph: ggufGraphOptionsFromEnv() })));
    else files = await readEmbeddingModelDir(dir, { dtype: options.dtype, modelFile: options.modelFile });
  } catch (error) {
    throw new Error(`Cannot load the model in "${dir}": ${(error as Error).message}`);
  }
  const threads = options.intraOpNumThreads === undefined || options.intraOpNumThreads === 'auto' ? availableParallelism() : options.intraOpNumThreads;
  return loadEmbeddingEngine({
    ort: await loadOnnxruntimeNode(),
    files,
    servedModelName: options.servedModelName ?? basename(dir),
    limits: options.limits,
    maxSeqLen: options.maxSeqLen,
    poolerOverride: options.poolerOverride,
    sessionOptions: { intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential' },
    notes,
  });
}
