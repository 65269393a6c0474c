/**
 * The web-llm home's pure parts: which phase a web-llm 0.2.79 progress text names, the
 * weights' total from ndarray-cache.json (what the page's "X of Y MB" is of), and the
 * adapter check before anything is downloaded. The browser run is test/e2e/playground-webllm.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { libraryNeedsShaderF16, mlcFileUrl, mlcWeightsBytes, NO_WEBGPU_MESSAGE, webLlmAdapterRefusal, webLlmPhase } from '../../src/runtime/browser-webllm.js';

describe('browser-webllm', () => {
  it('reads the phase from web-llm’s progress texts', () => {
    // web-llm 0.2.79's words (its fetchNDArrayCacheInternal and shader loading).
    expect(webLlmPhase('Start to fetch params')).toBe('download');
    expect(webLlmPhase('Fetching param cache[3/9]: 96MB fetched. 33% completed, 4 secs elapsed. It can take a while…')).toBe('download');
    expect(webLlmPhase('Loading model from cache[2/9]: 64MB loaded. 22% completed, 9 secs elapsed.')).toBe('gpu');
    expect(webLlmPhase('Loading GPU shader modules[12/73]: 16% completed, 20 secs elapsed.')).toBe('other');
  });

  it('sums the shards ndarray-cache.json lists', () => {
    expect(mlcWeightsBytes({ records: [{ nbytes: 10 }, { nbytes: 32 }, { dataPath: 'x' }] })).toBe(42);
    expect(mlcWeightsBytes({})).toBe(0);
  });

  it('refuses an f16 library without shader-f16, and everything without an adapter, before any download', () => {
    const f16 = 'https://host/v0_2_48/Qwen2-0.5B-Instruct-q4f16_1-ctx4k_cs1k-webgpu.wasm';
    const f32 = 'https://host/v0_2_48/Qwen2-0.5B-Instruct-q4f32_1-ctx4k_cs1k-webgpu.wasm';
    expect(libraryNeedsShaderF16(f16)).toBe(true);
    expect(libraryNeedsShaderF16(f32)).toBe(false);
    expect(webLlmAdapterRefusal(new Set(), f16)).toContain('"shader-f16"');
    expect(webLlmAdapterRefusal(new Set(['shader-f16']), f16)).toBeNull();
    expect(webLlmAdapterRefusal(new Set(), f32)).toBeNull();
    expect(webLlmAdapterRefusal(null, f32)).toBe(NO_WEBGPU_MESSAGE);
    expect(mlcFileUrl('https://huggingface.co/mlc-ai/M-MLC', 'ndarray-cache.json')).toBe('https://huggingface.co/mlc-ai/M-MLC/resolve/main/ndarray-cache.json');
  });
});
