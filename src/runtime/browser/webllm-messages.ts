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
/** web-llm's progress report (its InitProgressReport) with what it is a fraction of. */
export interface WebLlmProgress {
  /** 0..1 of the weights' bytes while downloading them, and again while moving them onto the GPU. */
  progress: number;
  timeElapsed: number;
  /** web-llm's own words. */
  text: string;
  /** 'download': the weights into Cache Storage; 'gpu': from there onto the GPU; 'other': the library, the shaders. */
  phase: 'download' | 'gpu' | 'other';
  /** The weights' size (ndarray-cache.json's shards), which `progress` is a fraction of while downloading. */
  totalBytes: number;
  /**
   * 'gpu': shards moved so far, of all. (web-llm's `progress` stays where the download left
   * it in this phase — 1 after a download, 0 when everything came from the cache.)
   */
  shards?: { done: number; of: number };
}

export function webLlmProgressText({ phase, progress, totalBytes, shards, text }: WebLlmProgress): string {
  if (phase === 'download') return `downloading the weights: ${megabytes(progress * totalBytes)} of ${megabytes(totalBytes)} MB (${Math.floor(progress * 100)}%)`;
  if (phase === 'gpu' && shards) return `moving the weights onto the GPU: shard ${shards.done} of ${shards.of} (${megabytes(totalBytes)} MB)`;
  return text;
}
