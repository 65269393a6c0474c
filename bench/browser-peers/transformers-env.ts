/**
 * transformers.js set up as both peer pages run it: models only from the page's own
 * ./models/ folder (no Hub, no browser cache), onnxruntime-web's WASM from ./ort/, on the
 * page's thread with `threads` threads.
 */
import { env } from '@huggingface/transformers';

export function useLocalTransformersWasm(threads: number): void {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.useBrowserCache = false;
  // A path, not a URL: transformers.js joins it with '/' (which would fold a URL's '//').
  env.localModelPath = new URL('./models/', location.href).pathname;
  const wasm = env.backends.onnx.wasm!;
  wasm.wasmPaths = new URL('./ort/', location.href).href;
  wasm.numThreads = threads;
  wasm.proxy = false;
}
