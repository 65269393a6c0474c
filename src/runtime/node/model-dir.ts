import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { COMPANION_GRAPH_BASES, MODEL_FILE_PATHS, type CompanionGraphName, type ModelFiles } from '../../onnx/model-files.js';
import { readGraphStructure } from './graph-structure.js';
import { chooseOnnxFile, companionGraphFile, type OnnxFileSettings } from '../../engine/loading/model-variants.js';
import { CHAT_TEMPLATE_FILES, preprocessorSettings, processorSettings, withChatTemplateFiles, type ChatTemplateFiles } from '../../engine/loading/folder-layout.js';

async function readJson(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
}

async function readOptionalJson(path: string): Promise<Record<string, unknown> | undefined> {
  try {
    return await readJson(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function readOptionalText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** transformers 5's template files beside tokenizer_config.json (engine/loading/folder-layout.ts). */
async function readChatTemplateFiles(dir: string, listing: readonly string[]): Promise<ChatTemplateFiles> {
  const additional: Record<string, string> = {};
  for (const file of await listFiles(dir, CHAT_TEMPLATE_FILES.additionalDir)) {
    if (file.endsWith('.jinja')) additional[file.slice(CHAT_TEMPLATE_FILES.additionalDir.length, -'.jinja'.length)] = await readFile(join(dir, file), 'utf8');
  }
  return {
    jinja: listing.includes(CHAT_TEMPLATE_FILES.jinja) ? await readOptionalText(join(dir, CHAT_TEMPLATE_FILES.jinja)) : undefined,
    json: listing.includes(CHAT_TEMPLATE_FILES.json) ? await readOptionalJson(join(dir, CHAT_TEMPLATE_FILES.json)) : undefined,
    additional,
  };
}

async function listFiles(dir: string, prefix: string): Promise<string[]> {
  try {
    const entries = await readdir(join(dir, prefix), { withFileTypes: true });
    return entries.filter((entry) => !entry.isDirectory()).map((entry) => `${prefix}${entry.name}`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

export interface ReadModelDirOptions extends OnnxFileSettings {
  /**
   * Read external data files into memory (onnxruntime-web needs their bytes); otherwise
   * only their paths are known and onnxruntime-node opens them beside the graph.
   */
  readExternalData?: boolean;
  /**
   * Hold only the graph's structure in `onnx` (initializers without their data, see
   * graph-structure.ts), for onnxruntime-node, which opens the graph by path and reads the
   * weights itself. Not for a graph that is rebuilt in memory (LoRA).
   */
  graphStructureOnly?: boolean;
}

/** Reads a model directory in the Hugging Face ONNX layout (see onnx/model-files.ts). */
export async function readModelDir(dir: string, options: ReadModelDirOptions = {}): Promise<ModelFiles> {
  try {
    const listing = [...(await listFiles(dir, '')), ...(await listFiles(dir, 'onnx/'))];
    // Node's engines keep the KV cache on the CPU: a folder's in-place KV twin is the faster graph there.
    const choice = chooseOnnxFile(listing, { preferInPlaceKv: true, ...options }, 'the model folder');
    const onnxPath = join(dir, choice.file);
    const [config, generationConfig, tokenizerJson, tokenizerConfig, graph] = await Promise.all([
      readJson(join(dir, MODEL_FILE_PATHS.config)),
      readOptionalJson(join(dir, MODEL_FILE_PATHS.generationConfig)),
      readJson(join(dir, MODEL_FILE_PATHS.tokenizerJson)),
      readJson(join(dir, MODEL_FILE_PATHS.tokenizerConfig)),
      options.graphStructureOnly ? readGraphStructure(onnxPath) : readFile(onnxPath),
    ]);
    const { structure: onnx, fileBytes } = 'structure' in graph ? graph : { structure: graph, fileBytes: graph.byteLength };
    let weightBytes = fileBytes;
    const externalData: Array<{ path: string; data: Uint8Array }> = [];
    for (const file of choice.externalDataFiles) {
      const path = join(dir, file);
      if (options.readExternalData) {
        const data = await readFile(path);
        externalData.push({ path: basename(file), data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) });
        weightBytes += data.byteLength;
      } else {
        weightBytes += (await stat(path)).size;
      }
    }
    const companions: ModelFiles['companions'] = {};
    for (const [name, base] of Object.entries(COMPANION_GRAPH_BASES) as Array<[CompanionGraphName, string]>) {
      const file = companionGraphFile(listing, base, choice.dtype);
      if (file === null) continue;
      const bytes = await readFile(join(dir, file));
      companions[name] = { file, onnx: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), path: join(dir, file) };
    }
    const [preprocessorConfig, processorConfig] = await Promise.all([
      readOptionalJson(join(dir, MODEL_FILE_PATHS.preprocessorConfig)),
      readOptionalJson(join(dir, MODEL_FILE_PATHS.processorConfig)),
    ]);
    return {
      companions,
      preprocessorConfig: preprocessorSettings(preprocessorConfig, processorConfig),
      processorConfig: processorSettings(processorConfig, tokenizerConfig),
      config,
      generationConfig,
      tokenizerJson,
      tokenizerConfig: withChatTemplateFiles(tokenizerConfig, await readChatTemplateFiles(dir, listing)),
      onnx: new Uint8Array(onnx.buffer, onnx.byteOffset, onnx.byteLength),
      onnxFile: choice.file,
      onnxPath,
      ...(options.readExternalData ? { externalData } : {}),
      weightBytes,
      dtype: choice.dtype,
    };
  } catch (error) {
    throw new Error(`Cannot load the model in "${dir}": ${(error as Error).message}`);
  }
}

