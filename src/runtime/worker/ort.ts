import * as ort from 'onnxruntime-web/wasm';
import ortWasm from 'onnxruntime-web/ort-wasm-simd-threaded.wasm';
import type { OrtRuntime } from '../../onnx/ort-runtime.js';
import { registerPrecompiledWasm, wasmStandIn } from './wasm.js';

/**
 * onnxruntime-web's WebAssembly backend for workerd. The `.wasm` is uploaded with the
 * Worker and arrives precompiled; ORT is handed a stand-in for the binary (so it neither
 * fetches a URL nor compiles bytes) and its instantiate call is redirected to the real
 * module. One thread: workerd runs no Web Workers.
 */
export function workerOrt(): OrtRuntime {
  const standIn = wasmStandIn('onnxruntime-web');
  registerPrecompiledWasm({ name: 'onnxruntime-web', module: ortWasm, matches: standIn.matches });
  ort.env.wasm.wasmBinary = standIn.bytes;
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.proxy = false;
  return ort as unknown as OrtRuntime;
}
