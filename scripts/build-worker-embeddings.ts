/**
 * The embedding Worker's build step (wrangler.toml's [env.embeddings] build command, before
 * `wrangler dev --env embeddings` / `wrangler deploy --env embeddings`): reads the model
 * folder EMBEDDING_MODEL names (the build's environment, else wrangler.toml's
 * [env.embeddings.vars]; a path relative to wrangler.toml) as Node reads it (the graph
 * chosen by DTYPE / MODEL_FILE as under Node), refuses it with the reason when it is past
 * the Worker's size or memory limits (src/runtime/worker/embedding-limits.ts), and writes
 * dist/worker-embeddings/model.onnx (the graph, a Data module) and model.json (the
 * folder's JSON files and name), which src/runtime/worker/embeddings.ts imports.
 *
 *   EMBEDDING_MODEL=path/to/folder npx tsx scripts/build-worker-embeddings.ts
 */
import { copyFile, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatBytes } from '../src/engine/context-length.js';
import type { ModelDtype } from '../src/engine/loading/model-variants.js';
import { embeddingContextOf } from '../src/embeddings/load.js';
import { readEmbeddingModelDir } from '../src/runtime/node/embedding-engine.js';
import type { BundledEmbeddingInfo } from '../src/runtime/worker/embedding-engine.js';
import { embeddingShapeOf, planWorkerEmbedding, type WorkerEmbeddingPlan } from '../src/runtime/worker/embedding-limits.js';
import { workerGgufLimitsFrom } from '../src/runtime/worker/gguf-limits.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const WORKER_EMBEDDINGS_DIR = `${ROOT}dist/worker-embeddings`;
const EMBEDDINGS_ENV = 'embeddings';
/** The server's default maxBatchedTokens: what the plan lowers when the isolate cannot hold it. */
const DEFAULT_BATCHED_TOKENS = 8192;

type Settings = Record<string, unknown>;

async function buildSettings(environment: NodeJS.ProcessEnv): Promise<Settings> {
  const keys = ['EMBEDDING_MODEL', 'DTYPE', 'MODEL_FILE', 'MAX_SEQ_LEN', 'MAX_BATCHED_TOKENS', 'ISOLATE_MEMORY_BYTES'];
  if (environment.EMBEDDING_MODEL?.trim()) return Object.fromEntries(keys.filter((key) => environment[key]?.trim()).map((key) => [key, environment[key]!.trim()]));
  const { experimental_readRawConfig } = await import('wrangler');
  const { rawConfig } = experimental_readRawConfig({ config: join(ROOT, 'wrangler.toml') });
  return ((rawConfig.env as Record<string, { vars?: Settings }> | undefined)?.[EMBEDDINGS_ENV]?.vars ?? {}) as Settings;
}

const text = (value: unknown) => (typeof value === 'string' ? value.trim() : typeof value === 'number' ? String(value) : '');

export interface WorkerEmbeddingBuild {
  name: string;
  source: string;
  onnxFile: string;
  plan: WorkerEmbeddingPlan;
}

export async function buildWorkerEmbeddings(options: { environment?: NodeJS.ProcessEnv; outDir?: string } = {}): Promise<WorkerEmbeddingBuild> {
  const settings = await buildSettings(options.environment ?? process.env);
  const named = text(settings.EMBEDDING_MODEL);
  if (named === '') throw new Error(`EMBEDDING_MODEL must name a model folder (in the build's environment or wrangler.toml's [env.${EMBEDDINGS_ENV}.vars])`);
  const source = resolve(ROOT, named);
  const name = source.split(/[/\\]+/).filter((part) => part !== '').pop()!;
  const fail = (message: string): never => {
    throw new Error(`Cannot bundle the embedding model "${named}" into the Worker: ${message}`);
  };
  const files = await readEmbeddingModelDir(source, {
    dtype: (text(settings.DTYPE) || undefined) as ModelDtype | undefined,
    modelFile: text(settings.MODEL_FILE) || undefined,
  }).catch((error: Error) => fail(error.message));
  const onnxPath = files.onnx as string;
  const { size } = await stat(onnxPath);
  const maxSeqLen = text(settings.MAX_SEQ_LEN) === '' ? null : Number(text(settings.MAX_SEQ_LEN));
  const requested = text(settings.MAX_BATCHED_TOKENS) === '' ? DEFAULT_BATCHED_TOKENS : Number(text(settings.MAX_BATCHED_TOKENS));
  let plan!: WorkerEmbeddingPlan;
  try {
    const context = embeddingContextOf(files, maxSeqLen).maxModelLen;
    plan = planWorkerEmbedding(name, size, embeddingShapeOf(files.config, context), requested, workerGgufLimitsFrom(settings));
  } catch (error) {
    fail((error as Error).message);
  }
  const { onnx: _path, onnxFile, ...json } = files;
  const info: BundledEmbeddingInfo = { name, onnxFile, files: json };
  const infoText = `${JSON.stringify(info)}\n`;
  const outDir = options.outDir ?? WORKER_EMBEDDINGS_DIR;
  await mkdir(outDir, { recursive: true });
  // Unchanged: leave the files a running wrangler dev bundles alone.
  const previous = await readFile(join(outDir, 'model.json'), 'utf8').catch(() => null);
  const previousGraph = await stat(join(outDir, 'model.onnx')).catch(() => null);
  if (previous !== infoText || previousGraph?.size !== size) {
    const partial = join(outDir, `model.onnx.partial-${process.pid}`);
    await copyFile(onnxPath, partial);
    await rename(partial, join(outDir, 'model.onnx'));
    await writeFile(join(outDir, 'model.json'), infoText);
  }
  return { name, source, onnxFile, plan };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  buildWorkerEmbeddings()
    .then(({ name, onnxFile, plan }) => {
      console.log(
        `Worker embedding model: ${name} (${onnxFile}, ${formatBytes(plan.fileBytes)}); about ${formatBytes(plan.peakBytes)} of the isolate's memory at the peak, ` +
          `a model call pads to at most ${plan.maxBatchedTokens} tokens.`,
      );
    })
    .catch(async (error: unknown) => {
      await rm(join(WORKER_EMBEDDINGS_DIR, 'model.json'), { force: true });
      console.error('Worker embedding build failed:', error instanceof Error ? error.message : error);
      process.exit(1);
    });
}
