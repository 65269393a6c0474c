import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { emptyKvCache, markRealSlots, repackKvCache } from '../../../src/engine/kv/kv-cache.js';
import type { KvCache } from '../../../src/engine/kv/types.js';
import { modelSpecFromConfig } from '../../../src/onnx/model-spec.js';
import { OnnxDecoder } from '../../../src/engine/onnx-decoder.js';
import type { OrtRuntime } from '../../../src/onnx/ort-runtime.js';
import { readModelDir } from '../../../src/runtime/node/model-dir.js';

const MODEL_DIR = fileURLToPath(new URL('../../../models/stories260k/', import.meta.url));

/** A cache whose every element encodes (layer, row, head, slot, dim) so copies can be traced. */
function tracedCache(batch: number, length: number, heads = 2, headDim = 3, layers = 2): KvCache {
  const make = (layer: number, kind: number) => {
    const data = new Float32Array(batch * heads * length * headDim);
    for (let b = 0; b < batch; b++)
      for (let h = 0; h < heads; h++)
        for (let s = 0; s < length; s++)
          for (let d = 0; d < headDim; d++)
            data[((b * heads + h) * length + s) * headDim + d] = kind * 1e5 + layer * 1e4 + b * 1e3 + h * 100 + s * 10 + d;
    return data;
  };
  return {
    batch,
    length,
    heads,
    headDim,
    keys: Array.from({ length: layers }, (_, l) => make(l, 1)),
    values: Array.from({ length: layers }, (_, l) => make(l, 2)),
  };
}

function at(cache: KvCache, layer: number, row: number, head: number, slot: number, dim: number, kind: 'k' | 'v') {
  const data = kind === 'k' ? cache.keys[layer] : cache.values[layer];
  return data[((row * cache.heads + head) * cache.length + slot) * cache.headDim + dim];
}

describe('repackKvCache', () => {
  it('right-aligns each row’s real slots and zero-fills the padding', () => {
    const a = tracedCache(2, 5);
    const b = tracedCache(1, 3);
    // Row 1 of `a` has 4 real slots (its first slot is padding); `b` has 3.
    const packed = repackKvCache(
      [
        { cache: a, row: 1, realLength: 4 },
        { cache: b, row: 0, realLength: 3 },
      ],
      4,
      a,
    );
    expect(packed.batch).toBe(2);
    expect(packed.length).toBe(4);
    for (let layer = 0; layer < 2; layer++)
      for (let head = 0; head < 2; head++)
        for (let dim = 0; dim < 3; dim++) {
          for (let slot = 0; slot < 4; slot++) {
            expect(at(packed, layer, 0, head, slot, dim, 'k')).toBe(at(a, layer, 1, head, slot + 1, dim, 'k'));
            expect(at(packed, layer, 0, head, slot, dim, 'v')).toBe(at(a, layer, 1, head, slot + 1, dim, 'v'));
          }
          expect(at(packed, layer, 1, head, 0, dim, 'k')).toBe(0);
          for (let slot = 1; slot < 4; slot++) {
            expect(at(packed, layer, 1, head, slot, dim, 'k')).toBe(at(b, layer, 0, head, slot - 1, dim, 'k'));
          }
        }
  });

  it('leaves out the runtime tensors of its sources, which describe their old layout', () => {
    const a = tracedCache(1, 3);
    // A step's present outputs carry their tensors so the next step can feed them unchanged.
    const withTensors: KvCache = { ...a, tensors: { keys: [], values: [] } };
    const packed = repackKvCache([{ cache: withTensors, row: 0, realLength: 3 }], 4, withTensors);
    expect(packed.tensors).toBeUndefined();
    expect(at(packed, 1, 0, 1, 3, 2, 'v')).toBe(at(a, 1, 0, 1, 2, 2, 'v'));
  });

  it('left-aligns rows padded at the start (real slots first), keeping float16 bit patterns', () => {
    const a = tracedCache(2, 5);
    // Right padding: row 0 of `a` has 3 real slots, its first ones.
    const packed = repackKvCache([{ cache: a, row: 0, realLength: 3 }, { cache: a, row: 1, realLength: 4 }], 4, a, 'start');
    for (let slot = 0; slot < 3; slot++) expect(at(packed, 1, 0, 1, slot, 2, 'k')).toBe(at(a, 1, 0, 1, slot, 2, 'k'));
    expect(at(packed, 1, 0, 1, 3, 2, 'k')).toBe(0);
    for (let slot = 0; slot < 4; slot++) expect(at(packed, 0, 1, 0, slot, 1, 'v')).toBe(at(a, 0, 1, 0, slot, 1, 'v'));

    const half: KvCache = { ...a, keys: a.keys.map((k) => Uint16Array.from(k, (v) => v % 65536)), values: a.values.map((v) => Uint16Array.from(v, (x) => x % 65536)) };
    const packedHalf = repackKvCache([{ cache: half, row: 1, realLength: 2 }], 3, half);
    expect(packedHalf.keys[0]).toBeInstanceOf(Uint16Array);
    expect(at(packedHalf, 0, 0, 1, 0, 2, 'k')).toBe(0);
    for (let slot = 1; slot < 3; slot++) {
      expect(at(packedHalf, 0, 0, 1, slot, 2, 'k')).toBe(at(half, 0, 1, 1, slot + 2, 2, 'k'));
      expect(at(packedHalf, 1, 0, 0, slot, 0, 'v')).toBe(at(half, 1, 1, 0, slot + 2, 0, 'v'));
    }
  });

  it('marks each row\'s real slots on its padding side', () => {
    const mask = new BigInt64Array(2 * 5);
    markRealSlots(mask, 0, 5, 3, 'end');
    markRealSlots(mask, 1, 5, 2, 'start');
    expect([...mask].map(Number)).toEqual([0, 0, 1, 1, 1, 1, 1, 0, 0, 0]);
  });

  it('refuses a row longer than the target', () => {
    const a = tracedCache(1, 5);
    expect(() => repackKvCache([{ cache: a, row: 0, realLength: 5 }], 4, a)).toThrow(/does not fit/);
  });
});

describe('OnnxDecoder and a cache’s runtime tensors', () => {
  it('feeds a step’s present tensors back unchanged, but never stale ones for new arrays', async () => {
    const files = await readModelDir(MODEL_DIR, { modelFile: 'onnx/model.onnx' });
    const spec = modelSpecFromConfig(files.config, files.generationConfig);
    const decoder = await OnnxDecoder.create(ort as unknown as OrtRuntime, files.onnx, spec);
    const empty = emptyKvCache(spec.numLayers, 1, spec.numKeyValueHeads, spec.headDim);
    const ids = (values: number[]) => BigInt64Array.from(values, (v) => BigInt(v));
    const prompt = await decoder.run({
      batch: 1,
      seqLen: 3,
      inputIds: ids([1, 403, 407]),
      positionIds: ids([0, 1, 2]),
      attentionMask: ids([1, 1, 1]),
      past: empty,
    });
    expect(prompt.present.tensors?.keys[0].data).toBe(prompt.present.keys[0]);
    const step = (past: KvCache) =>
      decoder.run({ batch: 1, seqLen: 1, inputIds: ids([261]), positionIds: ids([3]), attentionMask: ids([1, 1, 1, 1]), past });
    const reused = await step(prompt.present);
    // Same data, wrapped afresh (as after a repack): the same logits.
    const rewrapped = await step({ ...prompt.present, tensors: undefined });
    expect(reused.logits).toEqual(rewrapped.logits);
    // New arrays with the old tensors still attached: the new arrays must win.
    const zeroed = { ...prompt.present, keys: prompt.present.keys.map((k) => new Float32Array(k.length)) };
    const fromZeroKeys = await step(zeroed);
    expect(fromZeroKeys.logits).not.toEqual(reused.logits);
    expect(fromZeroKeys.logits).toEqual((await step({ ...zeroed, tensors: undefined })).logits);
    await decoder.dispose();
  });
});
