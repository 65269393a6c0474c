/**
 * A GGUF file in the page: picked from disk (a File), dropped, or downloaded from a URL,
 * turned into the model files the in-page engine runs, with no server and no file system.
 *
 * The file is read through a Blob: the header first, then one tensor at a time
 * (`blob.slice().arrayBuffer()`), so the page never holds the whole file as one buffer
 * beside the graph's weights. The graph is the one Node builds for the same file
 * (gguf/gguf-model.ts, the in-place KV flavour the engine runs on a CPU-side cache),
 * weights kept quantized by default; its large initializers go into one external data
 * buffer, which is how onnxruntime-web takes weights (a protobuf graph is capped at 2 GB).
 * The tokenizer, chat template and special tokens come from the file's metadata.
 *
 * onnxruntime-web's WASM build has the contrib kernels the quantized graph uses
 * (MatMulNBits, GatherBlockQuantized), checked by the page's e2e test against the Node
 * server's output on the same file. `weights: 'float32'` builds the float twin instead
 * (4 bytes a weight), for a backend without them.
 */
import { MODEL_FILE_PATHS, type ModelFiles } from '../engine/model-files.js';
import type { GraphOps } from '../convert/llama-onnx-graph.js';
import type { ByteSource } from '../gguf/gguf-file.js';
import {
  buildGgufGraph,
  DEFAULT_GGUF_GRAPH_OPTIONS,
  encodeGgufGraph,
  externalDataLayout,
  ggufGraphPasses,
  ggufReportLines,
  openGgufModel,
  type GgufGraphOptions,
} from '../gguf/gguf-model.js';
import { fetchOk, readChunksWithProgress, type ProgressListener } from './browser-downloads.js';

/** The external data file the page's graph names (the bytes are handed over, never written). */
const EXTERNAL_DATA = 'model.onnx_data';

/** Reads a Blob as a GGUF ByteSource; `onRead` hears of every read (for progress). */
export function blobByteSource(blob: Blob, onRead?: (offset: number, length: number) => void): ByteSource {
  return {
    size: blob.size,
    async read(offset, length) {
      if (offset < 0 || offset + length > blob.size) throw new Error(`the file ended at byte ${blob.size} while reading ${length} bytes at ${offset}`);
      const bytes = new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer());
      onRead?.(offset, length);
      return bytes;
    },
  };
}

/**
 * Downloads a GGUF into a Blob, reporting progress per chunk. The chunks go into the Blob
 * as they are (the browser may keep a large Blob on disk), not into one ArrayBuffer.
 */
export async function downloadGguf(url: string, fetchFn: typeof fetch, onProgress?: ProgressListener): Promise<Blob> {
  const response = await fetchOk(fetchFn, url);
  return new Blob((await readChunksWithProgress(response, ggufNameOf(url), onProgress)) as BlobPart[]);
}

/** The name a GGUF is served under, as Node names it (MODEL_DIR=…/name.gguf serves "name.gguf"). */
export function ggufNameOf(pathOrUrl: string): string {
  let path = pathOrUrl;
  try {
    path = decodeURIComponent(new URL(pathOrUrl, 'file:///').pathname);
  } catch {
    // Not a URL: a plain file name.
  }
  return path.slice(path.lastIndexOf('/') + 1) || 'model.gguf';
}

export interface GgufModelFilesOptions extends Partial<GgufGraphOptions> {
  /** For messages and progress: the file's name. */
  name: string;
  /** The graph flavour; the in-place KV one (what Node runs) unless asked. */
  ops?: GraphOps;
  /** Hears of the graph build as bytes of the file's tensor data read (each weight pass counts). */
  onProgress?: ProgressListener;
  /** Says which runtime executes the graph, for the report ("onnxruntime-web, WebAssembly"). */
  executedBy?: string;
}

export interface GgufModelFiles {
  files: ModelFiles;
  /** The startup report's GGUF lines: architecture, tensor types, how each is executed. */
  notes: string[];
}

/**
 * The model files of a GGUF read through `source`: config, tokenizer and template from the
 * metadata, the decoder graph built from the tensors with its weights as external data.
 * A file the graph builder cannot serve exactly is refused with the reason (as under Node).
 */
export async function ggufModelFiles(source: ByteSource, options: GgufModelFilesOptions): Promise<GgufModelFiles> {
  const graphOptions: GgufGraphOptions = {
    weights: options.weights ?? DEFAULT_GGUF_GRAPH_OPTIONS.weights,
    accuracyLevel: options.accuracyLevel ?? DEFAULT_GGUF_GRAPH_OPTIONS.accuracyLevel,
  };
  const ops = options.ops ?? 'inplace';
  let model;
  try {
    model = await openGgufModel(source);
  } catch (error) {
    throw new Error(`Cannot load the GGUF "${options.name}": ${(error as Error).message}`, { cause: error });
  }
  // Progress over the tensor data: the float pass reads every tensor, the quantized form
  // reads the quantized ones again for their scales (and minimums).
  const dataBytes = Math.max(1, source.size - model.file.dataOffset);
  const passes = ggufGraphPasses(model, graphOptions);
  const expected = dataBytes * passes;
  let read = 0;
  const progressFile = `${options.name} (building the graph)`;
  const counted: ByteSource = {
    size: source.size,
    async read(offset, length) {
      const bytes = await source.read(offset, length);
      if (offset >= model.file.dataOffset) {
        read += length;
        options.onProgress?.({ file: progressFile, loadedBytes: Math.min(read, expected - 1), totalBytes: expected });
      }
      return bytes;
    },
  };
  options.onProgress?.({ file: progressFile, loadedBytes: 0, totalBytes: expected });
  let built;
  try {
    built = await buildGgufGraph({ ...model, file: { ...model.file, source: counted } }, ops, graphOptions);
  } catch (error) {
    throw new Error(`Cannot load the GGUF "${options.name}": ${(error as Error).message}`, { cause: error });
  }
  options.onProgress?.({ file: progressFile, loadedBytes: expected, totalBytes: expected });
  const layout = externalDataLayout(built.graph, EXTERNAL_DATA);
  const onnx = encodeGgufGraph(layout.graph, ops, model);
  const data = new Uint8Array(layout.size);
  for (const { offset, bytes } of layout.pieces) data.set(bytes, offset);
  const files: ModelFiles = {
    config: model.config,
    generationConfig: model.generationConfig,
    tokenizerJson: model.tokenizer.tokenizerJson,
    tokenizerConfig: model.tokenizer.tokenizerConfig,
    onnx,
    onnxFile: `${MODEL_FILE_PATHS.onnx} built from ${options.name}`,
    externalData: [{ path: EXTERNAL_DATA, data }],
    weightBytes: onnx.byteLength + data.byteLength,
    dtype: graphOptions.weights === 'float32' ? 'fp32 (GGUF dequantized)' : 'GGUF weights kept quantized',
  };
  const notes = [
    ...ggufReportLines(model),
    ...built.execution,
    `GGUF graph: built in this page${options.executedBy ? `, executed by ${options.executedBy}` : ''} (${graphOptions.weights} weights${graphOptions.weights === 'quantized' ? `, accuracy level ${graphOptions.accuracyLevel}` : ''})`,
  ];
  return { files, notes };
}
