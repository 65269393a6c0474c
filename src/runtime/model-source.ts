/**
 * A model folder the page reads without a file system: a URL (fetch), or a folder the
 * user picked (File objects). Which graph to load is chosen by the same rules as under
 * Node (engine/model-variants.ts): a picked folder lists its files; over HTTP nothing can
 * be listed, so the conventional variant names are probed (HEAD), fp32 first. The graph's
 * external data files are the ones its initializers name (graph-ops.ts), fetched from
 * beside it and handed to onnxruntime-web as `externalData`.
 */
import { externalDataLocations } from '../engine/graph-ops.js';
import { MODEL_FILE_PATHS, type ModelFiles } from '../engine/model-files.js';
import { concatChunks } from '../media/body-reader.js';
import { chooseOnnxFile, MODEL_DTYPES, onnxFolderCandidates, type OnnxFileSettings } from '../engine/model-variants.js';

export interface ModelSource {
  /** For messages: the folder's URL or name. */
  label: string;
  /** A file's bytes, or null when the folder has no such file. */
  read(path: string, onChunk?: (bytes: number) => void): Promise<Uint8Array | null>;
  /** Whether the folder has the file. */
  exists(path: string): Promise<boolean>;
  /** Every file path inside the folder, when the source can list them. */
  list?(): readonly string[];
}

async function readBody(response: Response, onChunk?: (bytes: number) => void): Promise<Uint8Array> {
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    onChunk?.(bytes.byteLength);
    return bytes;
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    total += value.byteLength;
    onChunk?.(value.byteLength);
  }
  return concatChunks(chunks, total);
}

/** A model folder served over HTTP (the playground's own, or any URL the user gives). */
export function urlModelSource(baseUrl: string, fetchFn: typeof fetch = globalThis.fetch.bind(globalThis)): ModelSource {
  const base = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
  const get = async (path: string, init?: RequestInit) => {
    try {
      return await fetchFn(base + path, init);
    } catch (error) {
      throw new Error(`Cannot download ${base + path}: ${(error as Error).message}`);
    }
  };
  return {
    label: base,
    async read(path, onChunk) {
      const response = await get(path);
      if (response.status === 404) return null;
      if (!response.ok) throw new Error(`Cannot download ${base + path}: HTTP ${response.status} ${response.statusText}`.trim());
      return readBody(response, onChunk);
    },
    async exists(path) {
      const response = await get(path, { method: 'HEAD' });
      if (response.status === 404) return false;
      if (response.ok) return true;
      // A server without HEAD: ask for the file and drop the body.
      const fallback = await get(path);
      await fallback.body?.cancel();
      return fallback.ok;
    },
  };
}

/** A folder picked in the page (<input type="file" webkitdirectory>): paths relative to the folder. */
export function pickedFolderSource(files: ReadonlyArray<{ path: string; file: Blob }>, label = 'the picked folder'): ModelSource {
  // webkitRelativePath starts with the picked folder's own name: drop it.
  const strip = (path: string) => path.replace(/^[^/]*\//, '');
  const byPath = new Map(files.map(({ path, file }) => [path.includes('/') ? strip(path) : path, file]));
  return {
    label,
    async read(path, onChunk) {
      const file = byPath.get(path);
      if (file === undefined) return null;
      const bytes = new Uint8Array(await file.arrayBuffer());
      onChunk?.(bytes.byteLength);
      return bytes;
    },
    async exists(path) {
      return byPath.has(path);
    },
    list: () => [...byPath.keys()],
  };
}

/** The graph files present, as far as a source that cannot list them can tell. */
async function probeGraphFiles(source: ModelSource, settings: OnnxFileSettings): Promise<string[]> {
  if (settings.modelFile !== undefined) return (await source.exists(settings.modelFile.replace(/^\.\//, ''))) ? [settings.modelFile.replace(/^\.\//, '')] : [];
  const probe = async (paths: string[]) => {
    const found = await Promise.all(paths.map(async (path) => ((await source.exists(path)) ? path : null)));
    return found.filter((path): path is string => path !== null);
  };
  /** The preferred name of a dtype first; the legacy one only when it is missing. */
  const firstOf = async (paths: string[]) => {
    for (const path of paths) if (await source.exists(path)) return [path];
    return [];
  };
  if (settings.dtype !== undefined) return firstOf(onnxFolderCandidates(settings.dtype));
  // fp32 wins when present, so the other names are asked for only without it.
  const fp32 = await firstOf(onnxFolderCandidates('fp32'));
  if (fp32.length > 0) return fp32;
  return probe(MODEL_DTYPES.slice(1).flatMap((dtype) => onnxFolderCandidates(dtype)));
}

/** The graph's external data files, named by the graph itself, beside it in the folder. */
async function externalDataOf(source: ModelSource, file: string, graph: Uint8Array, onChunk: (bytes: number) => void) {
  const folder = file.includes('/') ? file.slice(0, file.lastIndexOf('/') + 1) : '';
  const data: Array<{ path: string; data: Uint8Array }> = [];
  for (const location of externalDataLocations(graph)) {
    const bytes = await source.read(folder + location, onChunk);
    if (bytes === null) throw new Error(`${file} keeps its weights in ${location}, which ${source.label} does not have (${folder + location}).`);
    data.push({ path: location, data: bytes });
  }
  return data;
}

/** Reads a model folder from a source: config and tokenizer files, the chosen graph and its external data. */
export async function readModelSource(
  source: ModelSource,
  options: OnnxFileSettings & { onProgress?: (loadedBytes: number) => void } = {},
): Promise<ModelFiles> {
  let loaded = 0;
  const progress = (bytes: number) => {
    loaded += bytes;
    options.onProgress?.(loaded);
  };
  const json = async (path: string, required: boolean) => {
    const bytes = await source.read(path);
    if (bytes === null) {
      if (required) throw new Error(`Cannot download ${source.label}${path}: HTTP 404 Not Found`);
      return undefined;
    }
    return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
  };
  const listed = source.list?.();
  const graphFiles = listed ?? (await probeGraphFiles(source, options));
  const choice = chooseOnnxFile(graphFiles, options, source.label);
  const [config, generationConfig, tokenizerJson, tokenizerConfig, onnx] = await Promise.all([
    json(MODEL_FILE_PATHS.config, true),
    json(MODEL_FILE_PATHS.generationConfig, false),
    json(MODEL_FILE_PATHS.tokenizerJson, true),
    json(MODEL_FILE_PATHS.tokenizerConfig, true),
    source.read(choice.file, progress),
  ]);
  if (onnx === null) throw new Error(`Cannot download ${source.label}${choice.file}: HTTP 404 Not Found`);
  const externalData = await externalDataOf(source, choice.file, onnx, progress);
  return {
    config: config!,
    generationConfig,
    tokenizerJson: tokenizerJson!,
    tokenizerConfig: tokenizerConfig!,
    onnx,
    onnxFile: choice.file,
    externalData,
    weightBytes: loaded,
    dtype: choice.dtype,
  };
}
