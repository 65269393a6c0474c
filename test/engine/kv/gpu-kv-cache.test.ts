/**
 * The GPU-resident KV cache's bookkeeping, run under Node on a stand-in for a GPUDevice
 * (buffers in memory; copies run at submit, in order, as a WebGPU queue runs them): a
 * repack on the GPU lays rows out exactly as the JavaScript repack does, and every cache
 * is released once.
 */
import { describe, expect, it } from 'vitest';
import { GpuKvStore, type GpuDeviceLike } from '../../../src/engine/kv/gpu-kv-cache.js';
import { releaseKvCache, repackKvCache } from '../../../src/engine/kv/kv-cache.js';
import type { KvArray, KvCache, KvRowSource } from '../../../src/engine/kv/types.js';
import type { OrtRuntime, Tensor } from '../../../src/onnx/ort-runtime.js';

class MemoryBuffer {
  readonly bytes: Uint8Array;
  destroyed = false;
  constructor(readonly size: number) {
    this.bytes = new Uint8Array(size); // zeroed, like a new GPUBuffer
  }
  destroy(): void {
    this.destroyed = true;
  }
  floats(): Float32Array {
    if (this.destroyed) throw new Error('read after destroy');
    return new Float32Array(this.bytes.buffer.slice(0));
  }
}

function memoryDevice() {
  const submitted: number[] = [];
  const device: GpuDeviceLike = {
    createBuffer: ({ size }) => new MemoryBuffer(size),
    createCommandEncoder: () => {
      const copies: Array<() => void> = [];
      return {
        copyBufferToBuffer: (source, sourceOffset, target, targetOffset, size) => {
          for (const offset of [sourceOffset, targetOffset, size]) if (offset % 4 !== 0) throw new Error('WebGPU copies need 4-byte alignment');
          copies.push(() => {
            if ((source as MemoryBuffer).destroyed) throw new Error('copy from a destroyed buffer');
            (target as MemoryBuffer).bytes.set((source as MemoryBuffer).bytes.subarray(sourceOffset, sourceOffset + size), targetOffset);
          });
        },
        finish: () => copies,
      };
    },
    queue: {
      submit: (buffers) => {
        for (const copies of buffers as Array<Array<() => void>>) for (const copy of copies) copy();
        submitted.push(buffers.length);
      },
      writeBuffer: (buffer, offset, data) => {
        (buffer as MemoryBuffer).bytes.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), offset);
      },
    },
  };
  return { device, submitted };
}

/** onnxruntime's GPU tensors, as far as the store uses them. */
const fakeOrt = {
  Tensor: {
    fromGpuBuffer: (buffer: MemoryBuffer, options: { dataType: string; dims: number[]; dispose?: () => void }) =>
      ({ location: 'gpu-buffer', type: options.dataType, dims: options.dims, gpuBuffer: buffer, dispose: () => options.dispose?.() }) as unknown as Tensor,
  },
} as unknown as OrtRuntime;

/**
 * A JavaScript cache whose every element encodes (kind, layer, row, head, slot, dim); float16
 * caches (fp16 / q4f16 exports) hold the codes as 2-byte bit patterns, as onnxruntime hands them over.
 */
function tracedCache(batch: number, length: number, heads = 2, headDim = 4, layers = 2, type: 'float32' | 'float16' = 'float32'): KvCache {
  const make = (layer: number, kind: number) => {
    const size = batch * heads * length * headDim;
    const data = type === 'float16' ? new Uint16Array(size) : new Float32Array(size);
    for (let i = 0; i < data.length; i++) data[i] = type === 'float16' ? kind * 20_000 + layer * 5_000 + i + 1 : kind * 1e6 + layer * 1e5 + i + 1;
    return data;
  };
  return { batch, length, heads, headDim, keys: Array.from({ length: layers }, (_, l) => make(l, 1)), values: Array.from({ length: layers }, (_, l) => make(l, 2)) };
}

/** The same cache as a step's present outputs on the "GPU". */
function onGpu(store: GpuKvStore, cache: KvCache): KvCache {
  const tensor = (data: KvArray) => {
    const buffer = new MemoryBuffer(data.byteLength);
    buffer.bytes.set(new Uint8Array(data.buffer));
    return fakeOrt.Tensor.fromGpuBuffer(buffer as never, { dataType: data instanceof Uint16Array ? 'float16' : 'float32', dims: [cache.batch, cache.heads, cache.length, cache.headDim], dispose: () => buffer.destroy() });
  };
  return store.fromPresent(cache.keys.map(tensor), cache.values.map(tensor), cache);
}

const gpuFloats = (tensor: Tensor) => (tensor.gpuBuffer as unknown as MemoryBuffer).floats();

describe('GpuKvStore', () => {
  it('repacks rows on the GPU exactly as the JavaScript repack does: joins, leaves, forks, trimmed guesses', () => {
    const store = new GpuKvStore(fakeOrt);
    const { device, submitted } = memoryDevice();
    store.attach(device);
    const running = tracedCache(3, 6);
    const prompt = tracedCache(1, 4);
    const sources = (a: KvCache, b: KvCache): KvRowSource[] => [
      { cache: a, row: 2, realLength: 5 }, // a row that stays
      { cache: a, row: 2, realLength: 5 }, // its fork (beam search)
      { cache: a, row: 0, realLength: 3, end: 4 }, // two rejected guesses cut off
      { cache: b, row: 0, realLength: 4 }, // a new prompt joining
    ];
    const expected = repackKvCache(sources(running, prompt), 5, running);
    const gpuRunning = onGpu(store, running);
    const gpuPrompt = onGpu(store, prompt);
    const packed = repackKvCache(sources(gpuRunning, gpuPrompt), 5, gpuRunning);
    expect(packed.gpu).toBeDefined();
    expect(packed.keys).toEqual([]);
    expect([packed.batch, packed.length, packed.heads, packed.headDim]).toEqual([4, 5, 2, 4]);
    expect(submitted).toEqual([1]); // one command buffer for all layers
    for (let layer = 0; layer < 2; layer++) {
      expect(packed.gpu!.keys[layer].dims).toEqual([4, 2, 5, 4]);
      expect(gpuFloats(packed.gpu!.keys[layer])).toEqual(expected.keys[layer]);
      expect(gpuFloats(packed.gpu!.values[layer])).toEqual(expected.values[layer]);
    }
    // A JavaScript source (legal, if unexpected) is uploaded instead of copied.
    const mixed = repackKvCache([{ cache: gpuRunning, row: 1, realLength: 6 }, { cache: prompt, row: 0, realLength: 4 }], 6, gpuRunning);
    const mixedExpected = repackKvCache([{ cache: running, row: 1, realLength: 6 }, { cache: prompt, row: 0, realLength: 4 }], 6, running);
    expect(gpuFloats(mixed.gpu!.values[1])).toEqual(mixedExpected.values[1]);
  });

  it('repacks float16 caches (2-byte elements) on the GPU as the JavaScript repack does', () => {
    const store = new GpuKvStore(fakeOrt);
    store.attach(memoryDevice().device);
    const running = tracedCache(3, 6, 2, 4, 2, 'float16');
    const prompt = tracedCache(1, 4, 2, 4, 2, 'float16');
    const sources = (a: KvCache, b: KvCache): KvRowSource[] => [
      { cache: a, row: 2, realLength: 5 },
      { cache: a, row: 0, realLength: 3, end: 4 },
      { cache: b, row: 0, realLength: 4 },
    ];
    const expected = repackKvCache(sources(running, prompt), 5, running);
    expect(expected.keys[0]).toBeInstanceOf(Uint16Array);
    const packed = repackKvCache(sources(onGpu(store, running), onGpu(store, prompt)), 5, onGpu(store, running));
    const halves = (tensor: Tensor) => new Uint16Array((tensor.gpuBuffer as unknown as MemoryBuffer).bytes.buffer.slice(0));
    for (let layer = 0; layer < 2; layer++) {
      expect(packed.gpu!.keys[layer].type).toBe('float16');
      expect(halves(packed.gpu!.keys[layer])).toEqual(expected.keys[layer]);
      expect(halves(packed.gpu!.values[layer])).toEqual(expected.values[layer]);
    }
    // JavaScript float16 sources alone are uploaded as float16, not read as float32.
    const uploaded = repackKvCache([{ cache: prompt, row: 0, realLength: 4 }], 4, prompt);
    expect(uploaded.gpu).toBeUndefined(); // no GPU cache involved: the JavaScript repack
    const toGpu = store.repack([{ cache: prompt, row: 0, realLength: 4 }], 4, prompt);
    expect(toGpu.gpu!.keys[0].type).toBe('float16');
    expect(halves(toGpu.gpu!.keys[1])).toEqual(prompt.keys[1]);
  });

  it('counts live caches and frees each one’s buffers once', () => {
    const store = new GpuKvStore(fakeOrt);
    store.attach(memoryDevice().device);
    const first = onGpu(store, tracedCache(1, 3));
    const second = repackKvCache([{ cache: first, row: 0, realLength: 3 }], 3, first);
    expect(store.liveCaches).toBe(2);
    releaseKvCache(first);
    releaseKvCache(first);
    expect(store.liveCaches).toBe(1);
    expect((first.gpu!.keys[0].gpuBuffer as unknown as MemoryBuffer).destroyed).toBe(true);
    expect((second.gpu!.keys[0].gpuBuffer as unknown as MemoryBuffer).destroyed).toBe(false);
    releaseKvCache(second);
    expect(store.liveCaches).toBe(0);
    // A JavaScript cache has nothing to release.
    expect(() => releaseKvCache(tracedCache(1, 2))).not.toThrow();
  });

  it('refuses to repack before it has a device', () => {
    const store = new GpuKvStore(fakeOrt);
    const cache = onGpu(store, tracedCache(1, 2));
    expect(() => repackKvCache([{ cache, row: 0, realLength: 2 }], 2, cache)).toThrow(/not attached/);
  });
});
