/** The web-llm engine's words for a browser that cannot run it (small: the page's first chunk imports it). */
export const NO_WEBGPU_MESSAGE =
  'web-llm needs WebGPU, and this browser offers no WebGPU adapter (no GPU, a blocked driver, WebGPU turned off, or a page that is not a secure context). ' +
  'Use the server or “In-page · WASM” (onnxruntime) instead.';
