/**
 * Which files of a Hub repo serving it needs, from the repo's file list: never the whole
 * repo (an onnx-community repo holds every dtype's graph, gigabytes for a small model).
 *
 * - An ONNX repo: the config, generation config, tokenizer and processor files, the chat
 *   template files, and the graph the settings choose (the same choice the loader makes on
 *   the folder, engine/model-variants.ts) with its external data and its companion graphs.
 * - `owner/repo:QUANT`: the one .gguf whose name carries the quantization (llama.cpp's rule:
 *   case-insensitive, split files' first part; a multimodal projector "mmproj" is not it).
 * - `owner/repo/file`: that file.
 */
import { COMPANION_GRAPH_BASES, MODEL_FILE_PATHS } from '../../../onnx/model-files.js';
import { CHAT_TEMPLATE_FILES } from '../../../engine/loading/folder-layout.js';
import { chooseOnnxFile, companionGraphFile, type OnnxFileSettings } from '../../../engine/loading/model-variants.js';
import { formatHubModelRef, type HubModelRef } from './model-ref.js';

/** Small files the loader reads beside the graph when present. */
const FOLDER_FILES = [...Object.values(MODEL_FILE_PATHS).filter((path) => path.endsWith('.json')), 'special_tokens_map.json', CHAT_TEMPLATE_FILES.jinja, CHAT_TEMPLATE_FILES.json];

export interface PickedFiles {
  files: string[];
  /** For a .gguf pick: the file the server serves (MODEL_DIR names it). */
  gguf?: string;
}

export function pickRepoFiles(ref: HubModelRef, listing: readonly string[], settings: OnnxFileSettings): PickedFiles {
  const label = `the Hugging Face repo ${formatHubModelRef(ref)}`;
  if (ref.file !== undefined) {
    if (!listing.includes(ref.file)) throw new Error(`${label} has no file "${ref.file}".`);
    return { files: [ref.file], ...(ref.file.endsWith('.gguf') ? { gguf: ref.file } : {}) };
  }
  const ggufs = listing.filter((file) => file.toLowerCase().endsWith('.gguf') && !/mmproj/i.test(file));
  if (ref.quant !== undefined) {
    const quant = ref.quant.toLowerCase();
    const matching = ggufs
      .filter((file) => {
        const name = file.toLowerCase().split('/').pop()!;
        // The quantization as a whole word of the name: Q4_K matches "…-q4_k.gguf", not "…-q4_k_m.gguf".
        return new RegExp(`(^|[-._])${quant.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}([-.]|$)`).test(name.replace(/\.gguf$/, ''));
      })
      // A split model's first part (…-00001-of-00003.gguf) is the one to load.
      .filter((file) => !/-\d{5}-of-\d{5}\.gguf$/i.test(file) || /-00001-of-\d{5}\.gguf$/i.test(file))
      .sort((a, b) => a.length - b.length);
    if (matching.length === 0) {
      const quants = ggufs.map((file) => file.split('/').pop()).join(', ');
      throw new Error(`${label} has no .gguf file for ${ref.quant}${quants ? ` (its .gguf files: ${quants})` : ' (it holds no .gguf file)'}.`);
    }
    if (/-00001-of-\d{5}\.gguf$/i.test(matching[0]!)) throw new Error(`${label}: ${matching[0]} is split into parts, which the server does not load yet.`);
    return { files: [matching[0]!], gguf: matching[0]! };
  }
  const onnx = listing.filter((file) => file.startsWith('onnx/'));
  if (onnx.length === 0 && ggufs.length > 0) {
    throw new Error(`${label} holds .gguf files: name one as ${ref.repo}:QUANT (e.g. ${ref.repo}:Q4_K_M) or ${ref.repo}/FILE.gguf.`);
  }
  // The variant itself, not this project's in-place twin: the loader finds a twin by its base
  // graph (and Hub repos publish none), so fetching the twin alone would leave nothing to load.
  const choice = chooseOnnxFile(listing, { ...settings, preferInPlaceKv: false }, label);
  const files = new Set<string>([choice.file, ...choice.externalDataFiles]);
  for (const base of Object.values(COMPANION_GRAPH_BASES)) {
    const companion = companionGraphFile(listing, base, choice.dtype);
    if (companion === null) continue;
    files.add(companion);
    for (const data of listing.filter((file) => file.startsWith(`${companion}_data`))) files.add(data);
  }
  for (const file of listing) {
    if (FOLDER_FILES.includes(file) || file.startsWith(CHAT_TEMPLATE_FILES.additionalDir)) files.add(file);
  }
  return { files: [...files] };
}
