/**
 * onnxruntime-web's errors are written for its developers ("no available backend found.
 * ERR: [webgpu] RuntimeError: Aborted()", "Can't create a session. ERROR_CODE: 7, ..."). The
 * page shows what happened and what to do, with onnxruntime's own words kept after it.
 */
import type { BrowserBackend } from './engine.js';

const BACKEND_NAMES: Record<BrowserBackend, string> = { wasm: 'WebAssembly', webgpu: 'WebGPU' };

interface Explanation {
  test: RegExp;
  explain: (backend: BrowserBackend, match: RegExpExecArray) => string;
}

const EXPLANATIONS: Explanation[] = [
  {
    // Our own download errors already name the file and the reason.
    test: /^Cannot download /,
    explain: () => '',
  },
  {
    test: /Could not find an implementation for (\w+)\(\d+\)/,
    explain: (backend, match) =>
      `The model uses the operator ${match[1]}, which onnxruntime-web's ${BACKEND_NAMES[backend]} backend does not implement. Try the other in-page engine or the server.`,
  },
  {
    test: /protobuf parsing failed|Failed to load model|INVALID_PROTOBUF|INVALID_GRAPH|ModelProto|model_proto/i,
    explain: () => 'model.onnx is not a valid ONNX model (damaged, truncated, or another file served under its name).',
  },
  {
    test: /CompileError|WebAssembly\.(instantiate|compile)|expected magic word|failed to asynchronously prepare wasm|Aborted\(both async and sync fetching of the wasm failed\)/i,
    explain: () =>
      'onnxruntime-web’s .wasm file could not be compiled: the server sent something else under its name (an error page, a truncated file, or a file from another onnxruntime-web version). Reload; if it persists, rebuild with `npm run build:playground` and clear the page’s cache.',
  },
  {
    test: /requestAdapter|No available adapters|GPUAdapter|webgpu is not supported|WebGPU is not supported|\[webgpu\]/i,
    explain: () =>
      'WebGPU could not start in this browser (no usable GPU adapter, a blocked driver, or WebGPU turned off). Pick “In-page · WASM”, which runs everywhere.',
  },
  {
    test: /device (was )?lost|GPUDeviceLostInfo|DeviceLost/i,
    explain: () => 'The GPU device was lost (driver reset, the tab in the background too long, or out of GPU memory). Reload the page to start it again.',
  },
  {
    test: /out of memory|Array buffer allocation failed|Cannot enlarge memory|could not allocate|bad_alloc|OOM/i,
    explain: () => 'Not enough memory to load the model in this tab. Close other tabs, or use the server instead.',
  },
  {
    test: /SharedArrayBuffer|crossOriginIsolated|cross-origin isolat/i,
    explain: () =>
      'Several WebAssembly threads need a cross-origin-isolated page (COOP/COEP headers), which this page is not: serve it with `npm start`, or its static files with those headers.',
  },
];

/** The raw message without onnxruntime's boilerplate around it. */
function rawMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.trim();
}

/**
 * A message a person understands for an error the in-page engine hit while starting.
 * Unknown errors keep their own message, saying which backend failed.
 */
export function explainEngineError(error: unknown, backend: BrowserBackend): string {
  const raw = rawMessage(error);
  // Already written for people (browser-gpu.ts): an fp16 model on an adapter without shader-f16.
  if (error instanceof Error && error.name === 'AdapterCannotRunVariantError') return raw;
  for (const { test, explain } of EXPLANATIONS) {
    const match = test.exec(raw);
    if (!match) continue;
    const explained = explain(backend, match);
    return explained === '' ? raw : `${explained} (onnxruntime-web said: ${raw})`;
  }
  return `onnxruntime-web’s ${BACKEND_NAMES[backend]} backend failed: ${raw}`;
}
