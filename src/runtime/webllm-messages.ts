/** The web-llm engine's words for a browser that cannot run it, and its f16 check (small: the page's first chunk imports it). */
export const NO_WEBGPU_MESSAGE =
  'web-llm needs WebGPU, and this browser offers no WebGPU adapter (no GPU, a blocked driver, WebGPU turned off, or a page that is not a secure context). ' +
  'Use the server or “In-page · WASM” (onnxruntime) instead.';

/**
 * An f16 library (q4f16_1, q0f16, …) computes in float16: WebGPU's shader-f16 feature.
 * Read from the library's name: web-llm's prebuilt list marks only some of them
 * (`required_features`), Qwen2.5-0.5B-Instruct-q4f16_1-MLC not.
 */
export function libraryNeedsShaderF16(modelLibUrl: string): boolean {
  const name = new URL(modelLibUrl, 'http://x/').pathname.split('/').at(-1) ?? '';
  return /(^|[-_])q\d+f16(_\d+)?([-_.]|$)/.test(name);
}
