import type { WebLlmProgress } from './browser-webllm.js';

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

const megabytes = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/** A web-llm progress report as the page's status line says it: MB of the total while downloading, shards onto the GPU. */
export function webLlmProgressText({ phase, progress, totalBytes, shards, text }: WebLlmProgress): string {
  if (phase === 'download') return `downloading the weights: ${megabytes(progress * totalBytes)} of ${megabytes(totalBytes)} MB (${Math.floor(progress * 100)}%)`;
  if (phase === 'gpu' && shards) return `moving the weights onto the GPU: shard ${shards.done} of ${shards.of} (${megabytes(totalBytes)} MB)`;
  return text;
}
