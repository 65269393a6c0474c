/**
 * Node's side of GGUF serving: MODEL_DIR (or MODEL_FILE) naming a .gguf file. The file is
 * read by path through a file handle (the header first, then one tensor at a time); the
 * graph the engine runs is written once into a cache folder keyed by the file's path, size
 * and modification time (onnxruntime-node opens a graph by path and maps its external
 * weights itself, so JS never holds the whole model), and later starts reuse it.
 * `npm run convert -- --from-gguf` writes the same folder where asked.
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import type { GraphOps } from '../graph/llama-onnx-graph.js';
import type { OnnxGraph } from '../graph/onnx-writer.js';
import type { ByteSource } from './gguf-file.js';
import {
  buildGgufGraph,
  DEFAULT_GGUF_GRAPH_OPTIONS,
  encodeGgufGraph,
  externalDataLayout,
  GGUF_CONVERSION_VERSION,
  ggufGraphOptionsFromSettings,
  ggufReportLines,
  openGgufModel,
  type GgufGraphOptions,
  type GgufModel,
} from './gguf-model.js';

/** The startup report's execution lines, kept beside the graphs so a reused folder reports them too. */
const EXECUTION_FILE = 'gguf-execution.json';

export function isGgufPath(path: string | undefined): path is string {
  return path !== undefined && /\.gguf$/i.test(path);
}

export async function withFileSource<T>(path: string, use: (source: ByteSource) => Promise<T>): Promise<T> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    const source: ByteSource = {
      size,
      async read(offset, length) {
        const buffer = new Uint8Array(length);
        let done = 0;
        while (done < length) {
          const { bytesRead } = await handle.read(buffer, done, length - done, offset + done);
          if (bytesRead === 0) throw new Error(`the file ended at byte ${offset + done} while reading`);
          done += bytesRead;
        }
        return buffer;
      },
    };
    return await use(source);
  } finally {
    await handle.close();
  }
}

/** Initializers of at least 1 KiB go to `<graph>_data` beside the graph, written one at a time. */
function writeGraphWithExternalData(graph: OnnxGraph, graphPath: string, encode: (graph: OnnxGraph) => Uint8Array): void {
  const layout = externalDataLayout(graph, `${basename(graphPath)}_data`);
  const fd = openSync(`${graphPath}_data`, 'w');
  try {
    for (const { offset, bytes } of layout.pieces) writeSync(fd, bytes, 0, bytes.byteLength, offset);
    writeFileSync(graphPath, encode(layout.graph));
  } finally {
    closeSync(fd);
  }
}

export interface GgufFolderGraph {
  /** Path inside the folder, e.g. onnx/model.onnx. */
  file: string;
  ops: GraphOps;
}

/** The model folder for `model` at `outDir`: JSON files, then each graph with its external data; returns the execution report lines. */
export async function writeGgufModelFolder(
  path: string,
  model: GgufModel,
  outDir: string,
  graphs: readonly GgufFolderGraph[],
  options: GgufGraphOptions = DEFAULT_GGUF_GRAPH_OPTIONS,
): Promise<string[]> {
  mkdirSync(join(outDir, 'onnx'), { recursive: true });
  const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
  writeFileSync(join(outDir, 'config.json'), json(model.config));
  writeFileSync(join(outDir, 'generation_config.json'), json(model.generationConfig));
  writeFileSync(join(outDir, 'tokenizer.json'), json(model.tokenizer.tokenizerJson));
  writeFileSync(join(outDir, 'tokenizer_config.json'), json(model.tokenizer.tokenizerConfig));
  let execution: string[] = [];
  await withFileSource(path, async (source) => {
    // The header again, now bound to this read's handle.
    const reopened = { ...model, file: { ...model.file, source } };
    for (const { file, ops } of graphs) {
      const built = await buildGgufGraph(reopened, ops, options);
      execution = built.execution;
      writeGraphWithExternalData(built.graph, join(outDir, file), (g) => encodeGgufGraph(g, ops, model));
    }
  });
  writeFileSync(join(outDir, EXECUTION_FILE), json(execution));
  return execution;
}

/** GGUF_WEIGHTS (quantized | float32) and GGUF_ACCURACY_LEVEL (0 | 1 | 4) from the environment. */
export function ggufGraphOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): GgufGraphOptions {
  return ggufGraphOptionsFromSettings(env);
}

export async function openGgufModelAt(path: string, options: { embedding?: boolean } = {}): Promise<GgufModel> {
  try {
    return await withFileSource(path, (source) => openGgufModel(source, options));
  } catch (error) {
    throw new Error(`Cannot load the GGUF "${path}": ${(error as Error).message}`);
  }
}

function cacheRoot(): string {
  return process.env.GGUF_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'edge-llm', 'gguf');
}

/**
 * The model folder the engine loads for a .gguf file: built on first use into the cache
 * (the in-place KV graph, the one Node's engine runs), reused while the file is unchanged.
 */
export async function ggufModelFolder(ggufPath: string): Promise<{ dir: string; notes: string[] }> {
  const path = resolve(ggufPath);
  const options = ggufGraphOptionsFromEnv();
  const model = await openGgufModelAt(path);
  const { size, mtimeMs } = await stat(path);
  const key = createHash('sha256')
    .update(`${path}\0${size}\0${mtimeMs}\0${GGUF_CONVERSION_VERSION}\0${options.weights}\0${options.accuracyLevel}`)
    .digest('hex')
    .slice(0, 16);
  const dir = join(cacheRoot(), `${basename(path).replace(/\.gguf$/i, '')}-${key}`);
  const notes = ggufReportLines(model);
  if (existsSync(join(dir, 'onnx', 'model.onnx')) && existsSync(join(dir, EXECUTION_FILE))) {
    const execution = JSON.parse(readFileSync(join(dir, EXECUTION_FILE), 'utf8')) as string[];
    return { dir, notes: [...notes, ...execution, `GGUF graph: reused ${dir}`] };
  }
  const started = performance.now();
  const temporary = `${dir}.partial-${process.pid}`;
  let execution: string[];
  rmSync(temporary, { recursive: true, force: true });
  try {
    execution = await writeGgufModelFolder(path, model, temporary, [{ file: 'onnx/model.onnx', ops: 'inplace' }], options);
    // Another engine process may have finished first: its folder is the same.
    if (existsSync(dir)) rmSync(temporary, { recursive: true, force: true });
    else renameSync(temporary, dir);
  } catch (error) {
    rmSync(temporary, { recursive: true, force: true });
    throw new Error(`Cannot load the GGUF "${path}": ${(error as Error).message}`);
  }
  return { dir, notes: [...notes, ...execution, `GGUF graph: built in ${Math.round(performance.now() - started)} ms into ${dir}`] };
}
