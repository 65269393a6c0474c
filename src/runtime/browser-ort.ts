/**
 * onnxruntime-web for the page. Each backend is its own build of the package, loaded
 * only when chosen: the WASM build is ~75 kB of script plus one .wasm file, the WebGPU
 * build pulls a larger .wasm, so a visitor who never picks WebGPU never downloads it.
 */
import type { OrtRuntime } from '../engine/ort-runtime.js';
import type { BrowserBackend } from './browser-engine.js';

/** The .wasm file each backend's build fetches from `env.wasm.wasmPaths`. */
export const ORT_WASM_FILES: Record<BrowserBackend, string> = {
  wasm: 'ort-wasm-simd-threaded.wasm',
  webgpu: 'ort-wasm-simd-threaded.asyncify.wasm',
};

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

/**
 * Loads and configures onnxruntime-web.
 * @param wasmBaseUrl where the .wasm files are served, ending with a slash: they are
 *   served locally, never from a CDN.
 */
export async function loadBrowserOrt(backend: BrowserBackend, wasmBaseUrl: string): Promise<OrtRuntime> {
  const ort = backend === 'webgpu' ? await import('onnxruntime-web/webgpu') : await import('onnxruntime-web/wasm');
  // Only the .wasm path: with a path prefix the bundle would fetch its JS glue separately
  // instead of using the copy it embeds.
  ort.env.wasm.wasmPaths = { wasm: new URL(ORT_WASM_FILES[backend], wasmBaseUrl).href };
  // Several threads need SharedArrayBuffer, i.e. a cross-origin-isolated page; the model
  // is tiny, so one thread on the page's own thread costs little and works everywhere.
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.proxy = false;
  return ort as unknown as OrtRuntime;
}
