import { describe, expect, it } from 'vitest';
import { DownloadList, formatDownload } from '../../public/src/downloads.js';

describe('download progress text', () => {
  it('says bytes of total in the total’s unit, and the percent', () => {
    expect(formatDownload({ file: 'model.onnx', loadedBytes: 524_288, totalBytes: 1_089_099 })).toBe('model.onnx 0.5 of 1.0 MB (48%)');
    expect(formatDownload({ file: 'ort-wasm-simd-threaded.wasm', loadedBytes: 7_000_000, totalBytes: 14_239_897 })).toBe(
      'ort-wasm-simd-threaded.wasm 6.7 of 13.6 MB (49%)',
    );
    expect(formatDownload({ file: 'config.json', loadedBytes: 548, totalBytes: 548 })).toBe('config.json 548 of 548 B (100%)');
    expect(formatDownload({ file: 'model.onnx', loadedBytes: 1_089_099, totalBytes: 1_089_099, cached: true })).toBe(
      'model.onnx 1.0 of 1.0 MB (100%) from cache',
    );
  });

  it('says only what arrived when the size is unknown, and never rounds up to 100% early', () => {
    expect(formatDownload({ file: 'model.onnx', loadedBytes: 3_500_000, totalBytes: null })).toBe('model.onnx 3.3 MB');
    expect(formatDownload({ file: 'model.onnx', loadedBytes: 999, totalBytes: 1000 })).toBe('model.onnx 999 of 1000 B (99%)');
  });

  it('lists big files until the end and small ones only while they arrive', () => {
    const list = new DownloadList();
    list.update({ file: 'config.json', loadedBytes: 0, totalBytes: 548 });
    list.update({ file: 'model.onnx', loadedBytes: 0, totalBytes: 2_000_000 });
    expect(list.summary()).toBe('config.json 0 of 548 B (0%) · model.onnx 0.0 of 1.9 MB (0%)');
    list.update({ file: 'config.json', loadedBytes: 548, totalBytes: 548 });
    list.update({ file: 'model.onnx', loadedBytes: 2_000_000, totalBytes: 2_000_000 });
    expect(list.summary()).toBe('model.onnx 1.9 of 1.9 MB (100%)');
  });
});
