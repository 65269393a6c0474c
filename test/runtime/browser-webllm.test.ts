/**
 * The web-llm home's pure parts: which phase a web-llm 0.2.79 progress text names, the
 * weights' total from ndarray-cache.json (what the page's "X of Y MB" is of), and the
 * adapter check before anything is downloaded. The browser run is test/e2e/playground-webllm.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { libraryNeedsShaderF16, mlcFileUrl, mlcWeightsBytes, NO_WEBGPU_MESSAGE, shardCount, webLlmAdapterRefusal, webLlmPhase } from '../../src/runtime/browser/webllm.js';
import { webLlmProgressText } from '../../src/runtime/browser/webllm-messages.js';

describe('browser-webllm', () => {
  it('reads the phase from web-llm’s progress texts', () => {
    // web-llm 0.2.79's words (its fetchNDArrayCacheInternal and shader loading).
    expect(webLlmPhase('Start to fetch params')).toBe('download');
    expect(webLlmPhase('Fetching param cache[3/9]: 96MB fetched. 33% completed, 4 secs elapsed. It can take a while…')).toBe('download');
    expect(webLlmPhase('Loading model from cache[2/9]: 64MB loaded. 22% completed, 9 secs elapsed.')).toBe('gpu');
    expect(webLlmPhase('Loading GPU shader modules[12/73]: 16% completed, 20 secs elapsed.')).toBe('other');
  });

  it('says the progress as MB of the total while downloading and as shards while moving onto the GPU', () => {
    const totalBytes = 295.1 * 1024 * 1024;
    expect(webLlmProgressText({ phase: 'download', progress: 0.5, totalBytes, timeElapsed: 1, text: 'Fetching param cache[4/9]: …' })).toBe(
      'downloading the weights: 147.6 of 295.1 MB (50%)',
    );
    const text = 'Loading model from cache[3/9]: 295MB loaded. 100% completed, 9 secs elapsed.';
    expect(shardCount(text)).toEqual({ done: 3, of: 9 });
    // web-llm's fraction says 100% here (where the download left it): the shards say how far.
    expect(webLlmProgressText({ phase: 'gpu', progress: 1, totalBytes, timeElapsed: 9, text, shards: shardCount(text) })).toBe(
      'moving the weights onto the GPU: shard 3 of 9 (295.1 MB)',
    );
    expect(webLlmProgressText({ phase: 'other', progress: 0.2, totalBytes, timeElapsed: 9, text: 'Loading GPU shader modules[12/73]' })).toBe('Loading GPU shader modules[12/73]');
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
