/**
 * Downloads of the in-page engine's files (onnxruntime's .wasm, the model), with
 * progress per file: what has arrived of how much, from the response's content-length.
 */
import { concatChunks } from '../../media/body-reader.js';
import { FROM_CACHE_HEADER } from './cache.js';

/** One file's download so far. `totalBytes` is null when the server sent no length. */
export interface FileProgress {
  file: string;
  loadedBytes: number;
  totalBytes: number | null;
  /** Served from the page's cache instead of the network. */
  cached?: boolean;
}

export type ProgressListener = (progress: FileProgress) => void;

/** Fetches a URL, turning a network failure or an HTTP error into an error naming the file. */
export async function fetchOk(fetchFn: typeof fetch, url: string): Promise<Response> {
  let response: Response;
  try {
    response = await fetchFn(url);
  } catch (error) {
    throw new Error(`Cannot download ${url}: ${(error as Error).message}`);
  }
  if (!response.ok) throw new Error(`Cannot download ${url}: HTTP ${response.status} ${response.statusText}`.trim());
  return response;
}

/** The body's length from content-length, or null when unknown (or compressed). */
function declaredLength(response: Response): number | null {
  const header = response.headers.get('content-length');
  const length = header === null ? NaN : Number(header);
  // A compressed body's length is the compressed size: it would not match what is read.
  return Number.isSafeInteger(length) && length >= 0 && !response.headers.get('content-encoding') ? length : null;
}

/**
 * Reads a body to the end as the chunks it arrived in, reporting progress as they arrive:
 * first 0 of the total, then after each chunk, and last the full size as the total (100%
 * even without a length). The chunks are kept as they are, for a caller that wants a Blob
 * rather than one ArrayBuffer.
 */
export async function readChunksWithProgress(response: Response, file: string, onProgress?: ProgressListener): Promise<Uint8Array[]> {
  const cached = response.headers.get(FROM_CACHE_HEADER) === '1';
  const totalBytes = declaredLength(response);
  const report = (loadedBytes: number, total: number | null) => onProgress?.({ file, loadedBytes, totalBytes: total, ...(cached ? { cached } : {}) });
  report(0, totalBytes);
  const chunks: Uint8Array[] = [];
  let loaded = 0;
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    chunks.push(bytes);
    loaded = bytes.byteLength;
  } else {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      loaded += value.byteLength;
      if (totalBytes === null || loaded < totalBytes) report(loaded, totalBytes);
    }
  }
  report(loaded, loaded);
  return chunks;
}

/** Reads a body to the end into one array, with readChunksWithProgress's progress reports. */
export async function readWithProgress(response: Response, file: string, onProgress?: ProgressListener): Promise<Uint8Array> {
  const chunks = await readChunksWithProgress(response, file, onProgress);
  return concatChunks(chunks, chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0));
}

/** A file's name for people: its last path segment. */
export function fileName(url: string): string {
  const path = new URL(url).pathname;
  return path.slice(path.lastIndexOf('/') + 1);
}
