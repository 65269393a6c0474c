/**
 * An embedding model folder read through any reader of its JSON files (a URL in the page, a
 * folder the user picked): the onnx-community / Optimum layout's config.json and tokenizer
 * files, and sentence-transformers' modules.json, its modules' config.json (by the paths
 * modules.json names), config_sentence_transformers.json and sentence_bert_config.json. The
 * graph is read by the caller (which file, and how, depends on the home).
 */
import type { EmbeddingModelFiles } from './load.js';

/** A JSON file of the folder by its relative path, undefined when the folder has none. */
export type FolderJsonReader = (path: string) => Promise<Record<string, unknown> | undefined>;

export type EmbeddingFolderJson = Omit<EmbeddingModelFiles, 'onnx' | 'onnxFile'>;

/** modules.json's module paths the reader may follow: relative, inside the folder (the path is data from the folder). */
function modulePathsOf(modules: unknown): string[] {
  if (!Array.isArray(modules)) return [];
  const paths: string[] = [];
  for (const entry of modules as Array<Record<string, unknown> | null>) {
    const path = typeof entry?.path === 'string' ? entry.path : '';
    if (path === '' || path.split('/').includes('..') || path.startsWith('/') || path.includes('\\')) continue;
    paths.push(path);
  }
  return paths;
}

/** Every JSON file an embedding model needs, read side by side; config.json and tokenizer.json are required. */
export async function readEmbeddingFolderJson(read: FolderJsonReader, label = 'the model folder'): Promise<EmbeddingFolderJson> {
  const [config, tokenizerJson, tokenizerConfig, modules, settings, sentenceBertConfig] = await Promise.all([
    read('config.json'),
    read('tokenizer.json'),
    read('tokenizer_config.json'),
    read('modules.json'),
    read('config_sentence_transformers.json'),
    read('sentence_bert_config.json'),
  ]);
  if (config === undefined) throw new Error(`${label} has no config.json.`);
  if (tokenizerJson === undefined) throw new Error(`${label} has no tokenizer.json (the fast tokenizer is required).`);
  const paths = modulePathsOf(modules);
  const configs = await Promise.all(paths.map((path) => read(`${path.replace(/\/+$/, '')}/config.json`)));
  const moduleConfigs: Record<string, unknown> = {};
  paths.forEach((path, i) => {
    moduleConfigs[path] = configs[i];
  });
  return { config, tokenizerJson, tokenizerConfig: tokenizerConfig ?? {}, modules, moduleConfigs, settings, sentenceBertConfig };
}
