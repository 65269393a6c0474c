/**
 * Which ONNX file of a model folder to load. onnx-community / transformers.js exports ship
 * one graph per weight format side by side (onnx/model.onnx, onnx/model_q4.onnx, ...), older
 * Optimum exports a merged decoder (onnx/decoder_model_merged*.onnx); both name their
 * variants with the same suffixes, which transformers.js selects with its `dtype` option.
 * This module is pure: a runtime entry lists the folder and passes the names in.
 */

/** transformers.js's dtype names, in the order a folder's variants are listed. */
export const MODEL_DTYPES = ['fp32', 'fp16', 'q4', 'q4f16', 'int8', 'uint8', 'quantized', 'bnb4'] as const;
export type ModelDtype = (typeof MODEL_DTYPES)[number];

const DTYPE_SUFFIX: Record<ModelDtype, string> = {
  fp32: '',
  fp16: '_fp16',
  q4: '_q4',
  q4f16: '_q4f16',
  int8: '_int8',
  uint8: '_uint8',
  quantized: '_quantized',
  bnb4: '_bnb4',
};

/**
 * Variants whose arithmetic is float16 (weights and activations): on WebGPU they need the
 * adapter's `shader-f16` feature. q4 / int8 / ... keep float32 activations.
 */
export const FLOAT16_DTYPES: readonly ModelDtype[] = ['fp16', 'q4f16'];

/** Graph base names, preferred first: the current layout, then Optimum's merged decoder. */
const BASE_NAMES = ['model', 'decoder_model_merged'] as const;
/** Folders a graph may sit in, preferred first (Optimum's CLI writes to the folder itself). */
const FOLDERS = ['onnx/', ''] as const;

export interface OnnxFileChoice {
  /** Path of the graph inside the model folder, e.g. "onnx/model_q4.onnx". */
  file: string;
  /** The variant's dtype, or null for a `modelFile` whose name follows no convention. */
  dtype: ModelDtype | null;
  /** External data files beside the graph (paths inside the model folder), in order. */
  externalDataFiles: string[];
}

export interface OnnxFileSettings {
  dtype?: ModelDtype;
  /** A path inside the model folder naming any .onnx file; wins over `dtype`. */
  modelFile?: string;
  /**
   * Take the folder's in-place KV twin of the chosen variant (onnx/model.inplace.onnx beside
   * onnx/model.onnx, onnx/model_q4.inplace.onnx beside onnx/model_q4.onnx: the converter's
   * `inplace` flavour, inPlaceTwinOf) when it has one and no modelFile names a graph: the
   * twin is that variant's weights in another cache wiring, so asking for a dtype must not
   * cost the faster one. For homes whose engine runs the cache on the CPU (Node: native and
   * WASM); the page's WebGPU engine keeps the graph with present.* outputs, whose cache it
   * keeps on the GPU.
   */
  preferInPlaceKv?: boolean;
}

/** The in-place KV twin's path of a graph file: "onnx/model_q4.onnx" → "onnx/model_q4.inplace.onnx". */
export function inPlaceTwinOf(file: string): string {
  return `${file.slice(0, -'.onnx'.length)}.inplace.onnx`;
}

interface Variant {
  dtype: ModelDtype;
  file: string;
}

/** Every conventionally named variant present, one per dtype (the preferred name when several). */
function variantsPresent(present: ReadonlySet<string>): Variant[] {
  const variants: Variant[] = [];
  for (const dtype of MODEL_DTYPES) {
    const file = candidatePaths(dtype).find((path) => present.has(path));
    if (file !== undefined) variants.push({ dtype, file });
  }
  return variants;
}

/** The conventional graph paths of a dtype in the onnx/ folder, preferred first (for sources that cannot list files). */
export function onnxFolderCandidates(dtype: ModelDtype): string[] {
  return BASE_NAMES.map((base) => `onnx/${base}${DTYPE_SUFFIX[dtype]}.onnx`);
}

function candidatePaths(dtype: ModelDtype): string[] {
  return FOLDERS.flatMap((folder) => BASE_NAMES.map((base) => `${folder}${base}${DTYPE_SUFFIX[dtype]}.onnx`));
}

function dtypeOfFile(file: string): ModelDtype | null {
  const name = file.split('/').pop() ?? file;
  for (const dtype of [...MODEL_DTYPES].reverse()) {
    for (const base of BASE_NAMES) if (name === `${base}${DTYPE_SUFFIX[dtype]}.onnx`) return dtype;
  }
  return null;
}

function listVariants(variants: readonly Variant[]): string {
  return variants.map(({ dtype, file }) => `${dtype} (${file})`).join(', ');
}

/**
 * External data of `file`: "<name>.onnx_data" (Optimum, transformers.js) or
 * "<name>.onnx.data" (torch.onnx), and their numbered continuations "_1", "_2", ...
 */
export function externalDataFilesOf(file: string, present: Iterable<string>): string[] {
  const stem = file.slice(0, -'.onnx'.length);
  const prefixes = [`${stem}.onnx_data`, `${stem}.onnx.data`];
  const matches = [...present].filter((path) =>
    prefixes.some((prefix) => path === prefix || (path.startsWith(`${prefix}_`) && /^\d+$/.test(path.slice(prefix.length + 1)))),
  );
  const order = (path: string) => {
    const tail = /_(\d+)$/.exec(path);
    return tail && !prefixes.includes(path) ? Number(tail[1]) : 0;
  };
  return matches.sort((a, b) => order(a) - order(b) || a.localeCompare(b));
}

/**
 * Picks the graph to load from the folder's files (paths inside it, "/"-separated).
 * Throws a message a user can act on: what was asked, what is there, which setting to use.
 */
export function chooseOnnxFile(files: readonly string[], settings: OnnxFileSettings, folderLabel: string): OnnxFileChoice {
  const present = new Set(files);
  const choose = (file: string, dtype: ModelDtype | null): OnnxFileChoice => ({
    file,
    dtype,
    externalDataFiles: externalDataFilesOf(file, present),
  });
  const variants = variantsPresent(present);

  if (settings.modelFile !== undefined) {
    const file = settings.modelFile.replace(/^\.\//, '');
    if (!file.endsWith('.onnx')) throw new Error(`modelFile "${settings.modelFile}" must name an .onnx file.`);
    if (!present.has(file)) {
      const onnxFiles = files.filter((path) => path.endsWith('.onnx'));
      throw new Error(
        `modelFile "${settings.modelFile}" is not in ${folderLabel}` +
          (onnxFiles.length > 0 ? `; its .onnx files: ${onnxFiles.join(', ')}.` : '; it holds no .onnx file.'),
      );
    }
    return choose(file, dtypeOfFile(file));
  }

  // A twin is the variant's own weights: it stands in for the variant, never beside it.
  const twinOf = (variant: Variant): OnnxFileChoice =>
    settings.preferInPlaceKv && present.has(inPlaceTwinOf(variant.file)) ? choose(inPlaceTwinOf(variant.file), variant.dtype) : choose(variant.file, variant.dtype);
  if (settings.dtype !== undefined) {
    const wanted = variants.find((variant) => variant.dtype === settings.dtype);
    if (wanted) return twinOf(wanted);
    const expected = candidatePaths(settings.dtype).slice(0, 2).join(' or ');
    throw new Error(
      `dtype "${settings.dtype}" asks for ${expected}, which ${folderLabel} does not have` +
        (variants.length > 0
          ? `; variants present: ${listVariants(variants)}. Set dtype (MODEL_DTYPE) to one of them.`
          : `; it holds no model variant at all.`),
    );
  }

  if (variants.length === 1) return twinOf(variants[0]);
  const fp32 = variants.find((variant) => variant.dtype === 'fp32');
  if (fp32) return twinOf(fp32);
  if (variants.length > 1) {
    throw new Error(
      `${folderLabel} holds several model variants and no fp32 one: ${listVariants(variants)}. ` +
        `Choose one with the "dtype" setting (MODEL_DTYPE), e.g. dtype "${variants[0].dtype}", or name a file with "modelFile".`,
    );
  }
  const onnxFiles = files.filter((path) => path.endsWith('.onnx'));
  throw new Error(
    `${folderLabel} holds no ONNX decoder: expected onnx/model.onnx or a variant onnx/model_{${MODEL_DTYPES.slice(1).join(',')}}.onnx ` +
      `(or onnx/decoder_model_merged*.onnx)` +
      (onnxFiles.length > 0 ? `; found ${onnxFiles.join(', ')}: name one with the "modelFile" setting.` : '.'),
  );
}

/**
 * The companion graph `base` (e.g. "vision_encoder") in the same dtype as the decoder when
 * the folder has it ("onnx/vision_encoder_q4.onnx" beside "onnx/model_q4.onnx"), else its
 * fp32 file; null when the folder has neither.
 */
export function companionGraphFile(files: readonly string[], base: string, dtype: ModelDtype | null): string | null {
  const present = new Set(files);
  const candidates = [dtype !== null ? `onnx/${base}${DTYPE_SUFFIX[dtype]}.onnx` : null, `onnx/${base}.onnx`];
  return candidates.find((file): file is string => file !== null && present.has(file)) ?? null;
}
