import type { OrtRuntime, Tensor } from '../../onnx/ort-runtime.js';
import type { GpuKvTensors, KvCache, KvRowSource, KvStore } from './types.js';

/*
 * WebGPU only: the KV cache kept in GPU buffers from one step to the next. onnxruntime-web
 * writes a step's present.* outputs to GPU buffers (session option preferredOutputLocation
 * 'gpu-buffer'), the next step takes them back as past_key_values.* unchanged, and when the
 * batch's membership changes rows are repacked by GPU-side buffer copies. Nothing of the
 * cache crosses to the CPU; only the logits are read back.
 *
 * The WebGPU types are declared here (structurally) so the engine does not depend on
 * @webgpu/types; onnxruntime-web's GPU tensors carry real GPUBuffers.
 */

interface GpuBufferLike {
  readonly size: number;
  destroy(): void;
}

interface GpuCommandEncoderLike {
  copyBufferToBuffer(source: GpuBufferLike, sourceOffset: number, destination: GpuBufferLike, destinationOffset: number, size: number): void;
  finish(): unknown;
}

/** The part of a GPUDevice the cache uses. */
export interface GpuDeviceLike {
  createBuffer(descriptor: { size: number; usage: number }): GpuBufferLike;
  createCommandEncoder(): GpuCommandEncoderLike;
  queue: {
    submit(commandBuffers: unknown[]): void;
    writeBuffer(buffer: GpuBufferLike, offset: number, data: ArrayBufferView): void;
  };
}

/** GPUBufferUsage.COPY_SRC | COPY_DST | STORAGE: what onnxruntime-web needs of an input buffer. */
const KV_BUFFER_USAGE = 0x0004 | 0x0008 | 0x0080;

const BYTES_PER_ELEMENT: Partial<Record<Tensor.Type, number>> = { float32: 4, float16: 2 };

/**
 * Makes and repacks GPU-resident caches. One per engine, attached to onnxruntime-web's
 * GPUDevice once the WebGPU backend is up (the device only exists after the first session).
 */
export class GpuKvStore implements KvStore {
  private device: GpuDeviceLike | undefined;
  /** Caches made and not released yet: 0 once the engine is idle, or buffers leak. */
  liveCaches = 0;

  constructor(private readonly ort: OrtRuntime) {}

  attach(device: GpuDeviceLike): void {
    this.device = device;
  }

  /** Wraps a step's present.* outputs (GPU tensors) as the cache the next step feeds back. */
  fromPresent(keys: Tensor[], values: Tensor[], shape: { batch: number; length: number; heads: number; headDim: number }): KvCache {
    return { ...shape, keys: [], values: [], gpu: this.tensors(keys, values) };
  }

  /**
   * repackKvCache on the GPU: each source row's real slots copied, right-aligned, into
   * fresh zeroed buffers. A CPU source (not expected, but legal) is uploaded instead.
   */
  repack(sources: readonly KvRowSource[], length: number, template: KvCache): KvCache {
    const device = this.device;
    if (!device) throw new Error('the GPU KV cache is not attached to onnxruntime-web’s WebGPU device');
    const { heads, headDim } = template;
    const batch = sources.length;
    const numLayers = this.layerCount(sources, template);
    const type = this.elementType(sources);
    const elementBytes = BYTES_PER_ELEMENT[type];
    if (elementBytes === undefined) throw new Error(`KV cache of type ${type} cannot be kept on the GPU`);
    // WebGPU copies and writes move whole 4-byte words: a float16 row of odd head size could not be copied alone.
    if ((headDim * elementBytes) % 4 !== 0) throw new Error(`a ${type} KV cache with head size ${headDim} cannot be repacked on the GPU (rows are not 4-byte aligned)`);
    const dims = [batch, heads, length, headDim];
    const encoder = device.createCommandEncoder();
    const keys: Tensor[] = [];
    const values: Tensor[] = [];
    // WebGPU buffers start zeroed: padding needs no writes. Size 0 is not a valid buffer.
    const byteSize = Math.max(4, batch * heads * length * headDim * elementBytes);
    for (let layer = 0; layer < numLayers; layer++) {
      const key = device.createBuffer({ size: byteSize, usage: KV_BUFFER_USAGE });
      const value = device.createBuffer({ size: byteSize, usage: KV_BUFFER_USAGE });
      sources.forEach((source, targetRow) => {
        const { cache, row, realLength } = source;
        if (realLength > length) throw new Error(`kv row of ${realLength} slots does not fit in ${length}`);
        if (realLength === 0 || cache.length === 0) return;
        const end = source.end ?? cache.length;
        for (let head = 0; head < heads; head++) {
          const from = ((row * heads + head) * cache.length + (end - realLength)) * headDim;
          const to = ((targetRow * heads + head) * length + (length - realLength)) * headDim;
          const count = realLength * headDim;
          if (cache.gpu) {
            encoder.copyBufferToBuffer(gpuBuffer(cache.gpu.keys[layer]), from * elementBytes, key, to * elementBytes, count * elementBytes);
            encoder.copyBufferToBuffer(gpuBuffer(cache.gpu.values[layer]), from * elementBytes, value, to * elementBytes, count * elementBytes);
          } else {
            device.queue.writeBuffer(key, to * elementBytes, cache.keys[layer].subarray(from, from + count));
            device.queue.writeBuffer(value, to * elementBytes, cache.values[layer].subarray(from, from + count));
          }
        }
      });
      keys.push(this.tensorOf(key, type, dims));
      values.push(this.tensorOf(value, type, dims));
    }
    // Submitted before the sources are released: the queue runs the copies first.
    device.queue.submit([encoder.finish()]);
    return { batch, length, heads, headDim, keys: [], values: [], gpu: this.tensors(keys, values) };
  }

  private tensors(keys: Tensor[], values: Tensor[]): GpuKvTensors {
    let released = false;
    this.liveCaches += 1;
    return {
      store: this,
      keys,
      values,
      release: () => {
        if (released) return;
        released = true;
        this.liveCaches -= 1;
        for (const tensor of [...keys, ...values]) tensor.dispose();
      },
    };
  }

  private tensorOf(buffer: GpuBufferLike, type: Tensor.Type, dims: number[]): Tensor {
    return this.ort.Tensor.fromGpuBuffer(buffer as never, { dataType: type as 'float32', dims, dispose: () => buffer.destroy() });
  }

  private layerCount(sources: readonly KvRowSource[], template: KvCache): number {
    const gpu = template.gpu ?? sources.find((source) => source.cache.gpu)?.cache.gpu;
    return gpu ? gpu.keys.length : template.keys.length;
  }

  /** float32, or float16 (fp16 / q4f16 exports: 2-byte elements), from a GPU source or else a JavaScript one. */
  private elementType(sources: readonly KvRowSource[]): Tensor.Type {
    const gpu = sources.find((source) => source.cache.gpu && source.cache.length > 0)?.cache.gpu;
    if (gpu?.keys[0]) return gpu.keys[0].type;
    const cpu = sources.find((source) => !source.cache.gpu && source.cache.keys.length > 0)?.cache.keys[0];
    return cpu instanceof Uint16Array ? 'float16' : 'float32';
  }
}

function gpuBuffer(tensor: Tensor): GpuBufferLike {
  return tensor.gpuBuffer as unknown as GpuBufferLike;
}
