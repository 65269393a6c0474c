/**
 * onnxruntime-web for the page. Each backend is its own build of the package, loaded
 * only when chosen: the WASM build is ~75 kB of script plus one .wasm file, the WebGPU
 * build pulls a larger .wasm, so a visitor who never picks WebGPU never downloads it.
 */
import type { OrtRuntime } from '../../onnx/ort-runtime.js';
import { fetchOk, fileName, readWithProgress, type ProgressListener } from './downloads.js';
import type { BrowserBackend } from './engine.js';

/** The .wasm file each backend's build fetches from `env.wasm.wasmPaths`. */
export const ORT_WASM_FILES: Record<BrowserBackend, string> = {
  wasm: 'ort-wasm-simd-threaded.wasm',
  webgpu: 'ort-wasm-simd-threaded.asyncify.wasm',
};

/**
 * onnxruntime-web's two builds of its WebGPU backend: `asyncify` (26.8 MB of .wasm, every
 * browser with WebGPU) and `jspi` (16.8 MB, the same backend on WebAssembly's JavaScript
 * Promise Integration: Chromium 137+). The Worker home serves `jspi`, the one under its 25 MiB file limit.
 */
export type WebGpuBuild = 'asyncify' | 'jspi';

export const WEBGPU_WASM_FILES: Record<WebGpuBuild, string> = {
  asyncify: ORT_WASM_FILES.webgpu,
  jspi: 'ort-wasm-simd-threaded.jspi.wasm',
};

/** Whether this browser's WebAssembly has JavaScript Promise Integration (the `jspi` build needs it). */
export function hasJspi(): boolean {
  return typeof WebAssembly !== 'undefined' && 'Suspending' in WebAssembly && 'promising' in WebAssembly;
}

interface WebGpuNavigator {
  gpu?: { requestAdapter(): Promise<unknown> };
}

/**
 * Whether WebGPU can actually run here: browsers may expose navigator.gpu and still have
 * no adapter (no GPU, a blocklisted driver, headless without flags).
 */
export async function probeWebGpu(): Promise<boolean> {
  const gpu = typeof navigator === 'undefined' ? undefined : (navigator as WebGpuNavigator).gpu;
  if (!gpu) return false;
  try {
    return (await gpu.requestAdapter()) !== null;
  } catch {
    return false;
  }
}

export interface BrowserOrtOptions {
  /** Defaults to the page's fetch; the playground passes one that reads its cache first. */
  fetch?: typeof fetch;
  onProgress?: ProgressListener;
  /** Which WebGPU build to load (default asyncify): what the page's home serves. */
  webGpuBuild?: WebGpuBuild;
}

/** Below this much ONNX, one thread is faster: the kernels are too small to split. */
export const THREADED_MODEL_BYTES = 16 * 1024 * 1024;

/**
 * onnxruntime's WASM threads for a model of this size. Several threads need
 * SharedArrayBuffer, which only a cross-origin-isolated page has (COOP/COEP headers, as
 * `npm start` serves it); elsewhere onnxruntime runs on one. A small model runs on one
 * too: the embedded 1 MB model decodes at about a third of the speed on two threads
 * (docs/playground.md), as it does natively. Capped at 4, where hand-offs start to cost
 * more than they give on a model that still fits a browser tab.
 */
export function wasmThreadsFor(modelBytes: number): number {
  if (typeof crossOriginIsolated === 'undefined' || !crossOriginIsolated) return 1;
  if (modelBytes < THREADED_MODEL_BYTES) return 1;
  return Math.max(1, Math.min(4, typeof navigator === 'undefined' ? 1 : navigator.hardwareConcurrency || 1));
}

export interface BrowserOrt {
  ort: OrtRuntime;
  /** Sets onnxruntime's WASM threads: read when the first session is created, so call it before. */
  setThreads(count: number): void;
}

/**
 * Loads and configures onnxruntime-web (one thread until `setThreads`).
 * @param wasmBaseUrl where the .wasm files are served, ending with a slash: they are
 *   served locally, never from a CDN.
 */
export async function loadBrowserOrt(backend: BrowserBackend, wasmBaseUrl: string, options: BrowserOrtOptions = {}): Promise<BrowserOrt> {
  const webGpuBuild = options.webGpuBuild ?? 'asyncify';
  const wasmUrl = new URL(backend === 'webgpu' ? WEBGPU_WASM_FILES[webGpuBuild] : ORT_WASM_FILES.wasm, wasmBaseUrl).href;
  const fetchFn = options.fetch ?? globalThis.fetch.bind(globalThis);
  // The page downloads the .wasm itself, so it can show its progress (it is the largest
  // file by far) and keep it in its cache; onnxruntime then compiles these bytes.
  const [ort, wasmBinary] = await Promise.all([
    backend === 'wasm' ? import('onnxruntime-web/wasm') : webGpuBuild === 'jspi' ? import('onnxruntime-web/jspi') : import('onnxruntime-web/webgpu'),
    fetchOk(fetchFn, wasmUrl).then((response) => readWithProgress(response, fileName(wasmUrl), options.onProgress)),
  ]);
  ort.env.wasm.wasmBinary = wasmBinary;
  // Only the .wasm path: with a path prefix the bundle would fetch its JS glue separately
  // instead of using the copy it embeds.
  ort.env.wasm.wasmPaths = { wasm: wasmUrl };
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.proxy = false;
  return {
    ort: ort as unknown as OrtRuntime,
    setThreads: (count) => {
      ort.env.wasm.numThreads = count;
    },
  };
}
