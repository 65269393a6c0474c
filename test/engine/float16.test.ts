import { describe, expect, it } from 'vitest';
import { float16Bits, float16ToFloat32, float32Of } from '../../src/onnx/float16.js';

describe('float16 tensor data', () => {
  // 1.0, -2.0, 0.5, +Infinity as float16 bit patterns.
  const bits = Uint16Array.of(0x3c00, 0xc000, 0x3800, 0x7c00);

  it('reads bit patterns (Node: onnxruntime gives Uint16Array) as float32', () => {
    expect([...float16ToFloat32(bits)]).toEqual([1, -2, 0.5, Infinity]);
    expect(float32Of(bits)).toEqual(float16ToFloat32(bits));
    expect(float16Bits(bits)).toBe(bits);
  });

  it('views another 2-byte array (a browser’s Float16Array) as its bits without copying', () => {
    // Node 20 has no Float16Array: an Int16Array over the same bytes stands in for one.
    const other = new Int16Array(bits.buffer);
    const view = float16Bits(other);
    expect(view).toBeInstanceOf(Uint16Array);
    expect(view.buffer).toBe(bits.buffer);
    expect([...view]).toEqual([...bits]);
    expect([...float32Of(other)]).toEqual([1, -2, 0.5, Infinity]);
  });

  it('keeps float32 data as it is', () => {
    const floats = Float32Array.of(1.5, -3);
    expect(float32Of(floats)).toBe(floats);
  });
});
