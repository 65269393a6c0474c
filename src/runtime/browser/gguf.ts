/**
 * A GGUF file in the page: picked from disk (a File), dropped, or downloaded from a URL,
 * turned into the model files the in-page engine runs, with no server and no file system.
 *
 * The graph is built in a Web Worker (browser-gguf-worker.ts, one per file, ended when it
 * is done), so the page's main thread stays free to draw and answer while seconds of
 * dequantizing and re-laying weights run: the page posts the File or Blob (a handle to
 * the same bytes, not a copy), the worker reads it one tensor at a time
 * (`blob.slice().arrayBuffer()`), posts progress, and hands back the graph and its
 * weights' buffer by transfer, so the bytes move to the page without a copy. The float
 * graphs the build passes through die with the worker.
 *
 * What is built is gguf/gguf-model-files.ts's: the graph Node builds for the same file,
 * weights kept quantized by default, its large initializers in one external data buffer.
 * onnxruntime-web's WASM build has the contrib kernels the quantized graph uses
 * (MatMulNBits, GatherBlockQuantized), checked by the page's e2e test against the Node
 * server's output on the same file. `weights: 'float32'` builds the float twin instead.
 *
 * A GGUF made for llama.cpp's `--embedding` (its header sets a pooling type) is built as
 * Node builds it for /v1/embeddings (embeddings/gguf-embedding.ts), and refused with the
 * same reason where Node refuses it (encoder architectures, rerankers).
 */
import type { ModelFiles } from '../../onnx/model-files.js';
import { readGguf, type ByteSource } from '../../gguf/gguf-file.js';
import { embeddingGgufReason } from '../../gguf/embedding-gguf.js';
import { ggufEmbeddingFiles } from '../../embeddings/gguf-embedding.js';
import type { EmbeddingModelFiles } from '../../embeddings/load.js';
import { ggufModelFiles, type GgufBuildProgress, type GgufModelFiles } from '../../gguf/gguf-model-files.js';
import type { GgufWeights } from '../../gguf/gguf-model.js';
import { fetchOk, readChunksWithProgress, type ProgressListener } from './downloads.js';

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

/** What the page posts to the build worker. */
export interface GgufBuildRequest {
  /** The file (a picked File is a Blob): posting it hands over a handle, not the bytes. */
  blob: Blob;
  name: string;
  weights?: GgufWeights;
  /**
   * The graph's KV flavour: "inplace" (the engine keeps the cache) as Node builds it, or
   * "fused" (past in, present out), which the WebGPU engine takes: onnxruntime-web 1.30's
   * WebGPU backend failed the first forward pass of every GGUF-built inplace graph
   * ("createBindGroup … Required member is undefined"), while the fused one gives the WASM
   * engine's text.
   */
  ops?: 'inplace' | 'fused';
  /** Says which runtime executes the graph, for the report. */
  executedBy?: string;
}

/** What the build worker posts back: progress, then the files or why not. */
export type GgufBuildMessage =
  | { type: 'progress'; progress: GgufBuildProgress }
  | { type: 'built'; files: ModelFiles; notes: string[] }
  | { type: 'built-embedding'; files: GgufEmbeddingFiles; notes: string[] }
  | { type: 'failed'; message: string };

/** An embedding GGUF's files: the graph built from it (weights inside) and the files sentence-transformers would have. */
export type GgufEmbeddingFiles = EmbeddingModelFiles & { onnx: Uint8Array };

/** What a build gives the page: a generation model's files, or an embedding model's. */
export type GgufBuilt = ({ kind: 'generation' } & GgufModelFiles) | { kind: 'embeddings'; files: GgufEmbeddingFiles; notes: string[] };

/** The buffers a built model's bytes live in: moved to the page, not copied. */
export function transferablesOf(files: ModelFiles): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  for (const bytes of [files.onnx, ...(files.externalData ?? []).map(({ data }) => data)]) buffers.add(bytes.buffer as ArrayBuffer);
  return [...buffers];
}

/**
 * The build worker's side (browser-gguf-worker.ts): builds the files of `request` and
 * posts progress and the result, the graph and weight buffers in the transfer list.
 */
export async function answerGgufBuild(request: GgufBuildRequest, post: (message: GgufBuildMessage, transfer?: Transferable[]) => void): Promise<void> {
  let built: GgufModelFiles;
  try {
    if (await isEmbeddingGguf(request.blob)) {
      const source = blobByteSource(request.blob);
      const embedding = await ggufEmbeddingFiles(source, { name: request.name, graph: { weights: request.weights ?? 'quantized', accuracyLevel: 0 } }).catch((error: unknown) => {
        throw new Error(`Cannot load the GGUF "${request.name}": ${(error as Error).message}`, { cause: error });
      });
      const files = { ...embedding.files, onnx: embedding.files.onnx as Uint8Array };
      post({ type: 'built-embedding', files, notes: embedding.notes }, [files.onnx.buffer as ArrayBuffer]);
      return;
    }
    built = await ggufModelFiles(blobByteSource(request.blob), {
      name: request.name,
      weights: request.weights,
      ops: request.ops,
      builtWhere: 'built in a Web Worker of this page',
      executedBy: request.executedBy,
      onProgress: (progress) => post({ type: 'progress', progress }),
    });
  } catch (error) {
    post({ type: 'failed', message: (error as Error).message });
    return;
  }
  post({ type: 'built', files: built.files, notes: built.notes }, transferablesOf(built.files));
}

/** llama.cpp's `--embedding` files: the header says so (a pooling type, an encoder architecture); a file the header cannot be read from is left to the generation build's message. */
async function isEmbeddingGguf(blob: Blob): Promise<boolean> {
  try {
    return embeddingGgufReason(await readGguf(blobByteSource(blob))) !== null;
  } catch {
    return false;
  }
}

/**
 * The page's side: starts a build worker from `workerUrl` (the bundle's gguf-worker.js),
 * hands it the file and resolves with the model files it sends back; the worker ends
 * either way. Progress arrives as the worker reads the file's tensors.
 */
export function buildGgufInWorker(workerUrl: URL, request: GgufBuildRequest, onProgress?: ProgressListener): Promise<GgufBuilt> {
  const worker = new Worker(workerUrl, { type: 'module', name: `GGUF build: ${request.name}` });
  return new Promise<GgufBuilt>((resolve, reject) => {
    worker.onmessage = ({ data }: MessageEvent<GgufBuildMessage>) => {
      if (data.type === 'progress') {
        onProgress?.(data.progress);
        return;
      }
      worker.terminate();
      if (data.type === 'built') resolve({ kind: 'generation', files: data.files, notes: data.notes });
      else if (data.type === 'built-embedding') resolve({ kind: 'embeddings', files: data.files, notes: data.notes });
      else reject(new Error(data.message));
    };
    worker.onerror = (event) => {
      worker.terminate();
      reject(new Error(`Cannot load the GGUF "${request.name}": its build worker failed (${event.message || `${workerUrl.href} did not load`})`));
    };
    worker.postMessage(request);
  });
}
