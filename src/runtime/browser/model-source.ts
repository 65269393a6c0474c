/**
 * A model folder the page reads without a file system: a URL (fetch), or a folder the
 * user picked (File objects). Which graph to load is chosen by the same rules as under
 * Node (engine/loading/model-variants.ts): a picked folder lists its files; over HTTP nothing can
 * be listed, so the conventional variant names are probed (HEAD), fp32 first. The graph's
 * external data files are the ones its initializers name (graph-ops.ts), fetched from
 * beside it and handed to onnxruntime-web as `externalData`.
 */
import { externalDataLocations } from '../../engine/graph-ops.js';
import { MODEL_FILE_PATHS, type ModelFiles } from '../../onnx/model-files.js';
import { CHAT_TEMPLATE_FILES, withChatTemplateFiles } from '../../engine/loading/folder-layout.js';
import { fileName, readWithProgress, type ProgressListener } from './downloads.js';
import { chooseOnnxFile, MODEL_DTYPES, onnxFolderCandidates, type ModelDtype, type OnnxFileChoice, type OnnxFileSettings } from '../../engine/loading/model-variants.js';

export interface ModelSource {
  /** For messages: the folder's URL or name. */
  label: string;
  /** A file's bytes, or null when the folder has no such file; `onProgress` hears of its download. */
  read(path: string, onProgress?: ProgressListener): Promise<Uint8Array | null>;
  /** Whether the folder has the file. */
  exists(path: string): Promise<boolean>;
  /** Every file path inside the folder, when the source can list them. */
  list?(): readonly string[];
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
    async read(path, onProgress) {
      const response = await get(path);
      if (response.status === 404) return null;
      if (!response.ok) throw new Error(`Cannot download ${base + path}: HTTP ${response.status} ${response.statusText}`.trim());
      return readWithProgress(response, fileName(base + path), onProgress);
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
    async read(path, onProgress) {
      const file = byPath.get(path);
      if (file === undefined) return null;
      const name = path.slice(path.lastIndexOf('/') + 1);
      onProgress?.({ file: name, loadedBytes: 0, totalBytes: file.size });
      const bytes = new Uint8Array(await file.arrayBuffer());
      onProgress?.({ file: name, loadedBytes: bytes.byteLength, totalBytes: bytes.byteLength });
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
export async function externalDataOf(source: ModelSource, file: string, graph: Uint8Array, onProgress?: ProgressListener) {
  const folder = file.includes('/') ? file.slice(0, file.lastIndexOf('/') + 1) : '';
  const data: Array<{ path: string; data: Uint8Array }> = [];
  for (const location of externalDataLocations(graph)) {
    const bytes = await source.read(folder + location, onProgress);
    if (bytes === null) throw new Error(`${file} keeps its weights in ${location}, which ${source.label} does not have (${folder + location}).`);
    data.push({ path: location, data: bytes });
  }
  return data;
}

/**
 * The graph the settings choose from a source, found without downloading any of it (a
 * listing, or HEAD probes): so a caller can refuse a variant before its bytes are fetched.
 */
export async function chooseSourceGraph(source: ModelSource, settings: OnnxFileSettings = {}): Promise<OnnxFileChoice> {
  const graphFiles = source.list?.() ?? (await probeGraphFiles(source, settings));
  return chooseOnnxFile(graphFiles, settings, source.label);
}

/** Which of these dtypes' variants the source has (preferred file names only; HEAD probes over HTTP). */
export async function variantsInSource(source: ModelSource, dtypes: readonly ModelDtype[]): Promise<Array<{ dtype: ModelDtype; file: string }>> {
  const listed = source.list ? new Set(source.list()) : undefined;
  const found = await Promise.all(
    dtypes.map(async (dtype) => {
      for (const file of onnxFolderCandidates(dtype)) if (listed ? listed.has(file) : await source.exists(file)) return { dtype, file };
      return null;
    }),
  );
  return found.filter((variant): variant is { dtype: ModelDtype; file: string } => variant !== null);
}

/** Reads a model folder from a source: config and tokenizer files, the chosen graph and its external data. */
export async function readModelSource(
  source: ModelSource,
  options: OnnxFileSettings & {
    onProgress?: ProgressListener;
    /** The graph already chosen (chooseSourceGraph), so the folder is not probed twice. */
    choice?: OnnxFileChoice;
  } = {},
): Promise<ModelFiles> {
  const { onProgress } = options;
  const json = async (path: string, required: boolean) => {
    const bytes = await source.read(path, onProgress);
    if (bytes === null) {
      if (required) throw new Error(`Cannot download ${source.label}${path}: HTTP 404 Not Found`);
      return undefined;
    }
    return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
  };
  const choice = options.choice ?? (await chooseSourceGraph(source, options));
  const [config, generationConfig, tokenizerJson, tokenizerConfig, onnx] = await Promise.all([
    json(MODEL_FILE_PATHS.config, true),
    json(MODEL_FILE_PATHS.generationConfig, false),
    json(MODEL_FILE_PATHS.tokenizerJson, true),
    json(MODEL_FILE_PATHS.tokenizerConfig, true),
    source.read(choice.file, onProgress),
  ]);
  if (onnx === null) throw new Error(`Cannot download ${source.label}${choice.file}: HTTP 404 Not Found`);
  // transformers 5's template files (a plain URL cannot be listed, so additional_chat_templates/ is read only from a listed folder).
  const [templateJinja, templateJson] = await Promise.all([source.read(CHAT_TEMPLATE_FILES.jinja, onProgress), json(CHAT_TEMPLATE_FILES.json, false)]);
  const additional: Record<string, string> = {};
  for (const file of source.list?.() ?? []) {
    if (!file.startsWith(CHAT_TEMPLATE_FILES.additionalDir) || !file.endsWith('.jinja')) continue;
    const bytes = await source.read(file, onProgress);
    if (bytes !== null) additional[file.slice(CHAT_TEMPLATE_FILES.additionalDir.length, -'.jinja'.length)] = new TextDecoder().decode(bytes);
  }
  const chatTemplateFiles = { jinja: templateJinja === null ? undefined : new TextDecoder().decode(templateJinja), json: templateJson, additional };
  const externalData = await externalDataOf(source, choice.file, onnx, onProgress);
  return {
    config: config!,
    generationConfig,
    tokenizerJson: tokenizerJson!,
    tokenizerConfig: withChatTemplateFiles(tokenizerConfig!, chatTemplateFiles),
    onnx,
    onnxFile: choice.file,
    externalData,
    weightBytes: externalData.reduce((sum, file) => sum + file.data.byteLength, onnx.byteLength),
    dtype: choice.dtype,
  };
}
