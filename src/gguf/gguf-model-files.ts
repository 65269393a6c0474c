/**
 * A GGUF as the model files an in-memory home runs (a page, its Web Worker, a workerd
 * isolate): no file system, so the decoder graph is built in memory and its large weights
 * go into one external data buffer, which is how onnxruntime-web takes them (its protobuf
 * parser caps a graph at 2 GB). Config, tokenizer, chat template and special tokens come
 * from the file's metadata. The bytes come through a ByteSource (a Blob read one tensor at
 * a time in a page, the bundled module's buffer in a Worker).
 */
import { MODEL_FILE_PATHS, type ModelFiles } from '../onnx/model-files.js';
import type { GraphOps } from '../graph/llama-onnx-graph.js';
import type { ByteSource } from './gguf-file.js';
import {
  buildGgufGraph,
  DEFAULT_GGUF_GRAPH_OPTIONS,
  encodeGgufGraph,
  externalDataLayout,
  ggufGraphPasses,
  ggufReportLines,
  openGgufModel,
  type GgufGraphOptions,
  type GgufModel,
} from './gguf-model.js';

/** The external data file the graph names (the bytes are handed over, never written). */
export const GGUF_EXTERNAL_DATA = 'model.onnx_data';

/** Bytes of the file's tensor data read so far while building, of how many (every pass counts). */
export interface GgufBuildProgress {
  file: string;
  loadedBytes: number;
  totalBytes: number;
}

export interface GgufModelFilesOptions extends Partial<GgufGraphOptions> {
  /** For messages and progress: the file's name. */
  name: string;
  /** The graph flavour; the in-place KV one (what every engine runs) unless asked. */
  ops?: GraphOps;
  onProgress?: (progress: GgufBuildProgress) => void;
  /** Where the graph is built and what executes it, for the report ("built in this page, executed by …"). */
  builtWhere?: string;
  executedBy?: string;
  /** Called with the opened header before any weight is read: throw to refuse the file (a home's limits). */
  check?: (model: GgufModel, options: GgufGraphOptions) => void;
}

export interface GgufModelFiles {
  files: ModelFiles;
  /** The startup report's GGUF lines: architecture, tensor types, how each is executed. */
  notes: string[];
}

/** A ByteSource over bytes already in memory: reads are views, never copies. */
export function bytesByteSource(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.byteLength,
    async read(offset, length) {
      if (offset < 0 || offset + length > bytes.byteLength) throw new Error(`the file ended at byte ${bytes.byteLength} while reading ${length} bytes at ${offset}`);
      return bytes.subarray(offset, offset + length);
    },
  };
}

/** The graph options `options` asks for, over the defaults. */
export function ggufGraphOptionsOf(options: Partial<GgufGraphOptions>): GgufGraphOptions {
  return {
    weights: options.weights ?? DEFAULT_GGUF_GRAPH_OPTIONS.weights,
    accuracyLevel: options.accuracyLevel ?? DEFAULT_GGUF_GRAPH_OPTIONS.accuracyLevel,
  };
}

/**
 * The model files of a GGUF read through `source`: config, tokenizer and template from the
 * metadata, the decoder graph built from the tensors with its weights as external data.
 * A file the graph builder cannot serve exactly is refused with the reason (as under Node).
 */
export async function ggufModelFiles(source: ByteSource, options: GgufModelFilesOptions): Promise<GgufModelFiles> {
  const graphOptions = ggufGraphOptionsOf(options);
  const ops = options.ops ?? 'inplace';
  const refuse = (error: unknown) => new Error(`Cannot load the GGUF "${options.name}": ${(error as Error).message}`, { cause: error });
  let model: GgufModel;
  try {
    model = await openGgufModel(source);
    options.check?.(model, graphOptions);
  } catch (error) {
    throw refuse(error);
  }
  // Progress over the tensor data: the float pass reads every tensor, the quantized form
  // reads the quantized ones again for their scales (and minimums).
  const expected = Math.max(1, source.size - model.file.dataOffset) * ggufGraphPasses(model, graphOptions);
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
    throw refuse(error);
  }
  options.onProgress?.({ file: progressFile, loadedBytes: expected, totalBytes: expected });
  const layout = externalDataLayout(built.graph, GGUF_EXTERNAL_DATA);
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
    externalData: [{ path: GGUF_EXTERNAL_DATA, data }],
    weightBytes: onnx.byteLength + data.byteLength,
    dtype: graphOptions.weights === 'float32' ? 'fp32 (GGUF dequantized)' : 'GGUF weights kept quantized',
  };
  const where = options.builtWhere ?? 'built in memory';
  const notes = [
    ...ggufReportLines(model),
    ...built.execution,
    `GGUF graph: ${where}${options.executedBy ? `, executed by ${options.executedBy}` : ''} (${graphOptions.weights} weights${graphOptions.weights === 'quantized' ? `, accuracy level ${graphOptions.accuracyLevel}` : ''})`,
  ];
  return { files, notes };
}
