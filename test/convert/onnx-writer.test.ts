/** The hand-written ONNX serialiser, checked by having onnxruntime load and run its output. */
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { GraphBuilder } from '../../src/graph/graph-builder.js';
import { encodeOnnxModel, OnnxDataType } from '../../src/graph/onnx-writer.js';

function encode(
  build: (g: GraphBuilder) => void,
  metadata?: Record<string, string>,
  extraOpsets?: Record<string, number>,
): Uint8Array {
  const g = new GraphBuilder('test_graph');
  build(g);
  return encodeOnnxModel({
    irVersion: 8,
    opsetVersion: 17,
    producerName: 'writer-test',
    producerVersion: '1',
    metadata,
    extraOpsets,
    graph: g.build(),
  });
}

describe('encodeOnnxModel', () => {
  it('serialises inputs with symbolic dims, float initializers and node attributes', async () => {
    // y = Softmax(Transpose(x) * 2 + bias, axis=-1) exercises ints, negative int and tensors.
    const bytes = encode((g) => {
      const x = g.input('x', OnnxDataType.FLOAT, ['batch', 3]);
      const bias = g.floats('bias', [3], Float32Array.of(0.5, -1, 2));
      const xt = g.op('Transpose', [x], '/t', { perm: [1, 0] }); // [3, batch]
      const back = g.op('Transpose', [xt], '/t', { perm: [1, 0] });
      const scaled = g.op('Mul', [back, g.floatScalar('two', 2)], '/s');
      const shifted = g.op('Add', [scaled, bias], '/s');
      g.node('Softmax', [shifted], { scope: '/out', attributes: { axis: -1 }, outputs: ['y'] });
      g.output('y', OnnxDataType.FLOAT, ['batch', 3]);
    });
    const session = await ort.InferenceSession.create(bytes);
    expect(session.inputMetadata[0]).toMatchObject({ name: 'x', shape: ['batch', 3] });
    const x = Float32Array.of(1, 2, 3, -1, 0, 1);
    const { y } = await session.run({ x: new ort.Tensor('float32', x, [2, 3]) });
    const expected = [0, 1].flatMap((row) => {
      const z = [0, 1, 2].map((c) => Math.exp(2 * x[row * 3 + c] + [0.5, -1, 2][c]));
      const sum = z.reduce((a, b) => a + b, 0);
      return z.map((v) => v / sum);
    });
    Array.from(y.data as Float32Array).forEach((v, i) => expect(v).toBeCloseTo(expected[i], 6));
  });

  it('serialises int64 constants (including negative values) and float attributes', async () => {
    const bytes = encode((g) => {
      const x = g.input('x', OnnxDataType.FLOAT, [2, 3]);
      const flat = g.op('Reshape', [x, g.int64Constant([-1])], '/r'); // [6]
      const picked = g.op('Gather', [flat, g.int64Constant([-1, 0])], '/g'); // last and first
      const leaky = g.op('LeakyRelu', [picked], '/l', { alpha: 0.25 });
      // A whole-number float attribute must still be written as FLOAT (Elu rejects an INT alpha).
      g.node('Elu', [leaky], { scope: '/e', attributes: { alpha: { float: 2 } }, outputs: ['y'] });
      g.output('y', OnnxDataType.FLOAT, [2]);
    });
    const session = await ort.InferenceSession.create(bytes);
    const { y } = await session.run({ x: new ort.Tensor('float32', Float32Array.of(-4, 1, 2, 3, 4, -8), [2, 3]) });
    // LeakyRelu: [-8 * 0.25, -4 * 0.25] = [-2, -1]; Elu: 2 * (exp(v) - 1).
    const expected = [-2, -1].map((v) => 2 * (Math.exp(v) - 1));
    Array.from(y.data as Float32Array).forEach((v, i) => expect(v).toBeCloseTo(expected[i], 6));
  });

  it('records the producer and metadata', async () => {
    const bytes = encode(
      (g) => {
        const x = g.input('x', OnnxDataType.FLOAT, [1]);
        g.node('Identity', [x], { scope: '/i', outputs: ['y'] });
        g.output('y', OnnxDataType.FLOAT, [1]);
      },
      { source: 'unit test' },
    );
    const text = new TextDecoder('latin1').decode(bytes);
    expect(text).toContain('writer-test');
    expect(text).toContain('unit test');
    await expect(ort.InferenceSession.create(bytes)).resolves.toBeDefined();
  });

  it('serialises a contrib-domain node with an unused optional output, and int32 constants', async () => {
    const bytes = encode(
      (g) => {
        const x = g.input('x', OnnxDataType.FLOAT, [1, 4]);
        const skip = g.input('skip', OnnxDataType.FLOAT, [1, 4]);
        const gamma = g.floats('gamma', [4], Float32Array.of(1, 2, 3, 4));
        // Outputs 1 and 2 (mean, inv_std_var) are left out with empty names.
        g.node('SkipSimplifiedLayerNormalization', [x, skip, gamma], {
          scope: '/n',
          domain: 'com.microsoft',
          attributes: { epsilon: { float: 1e-5 } },
          outputs: ['y', '', '', 'sum'],
        });
        g.node('Add', [g.op('Cast', ['sum'], '/c', { to: OnnxDataType.INT32 }), g.int32Constant([5])], {
          scope: '/a',
          outputs: ['shifted'],
        });
        g.output('y', OnnxDataType.FLOAT, [1, 4]);
        g.output('sum', OnnxDataType.FLOAT, [1, 4]);
        g.output('shifted', OnnxDataType.INT32, [1, 4]);
      },
      undefined,
      { 'com.microsoft': 1 },
    );
    const session = await ort.InferenceSession.create(bytes);
    const { y, sum, shifted } = await session.run({
      x: new ort.Tensor('float32', Float32Array.of(1, -2, 3, 0), [1, 4]),
      skip: new ort.Tensor('float32', Float32Array.of(1, 0, -1, 2), [1, 4]),
    });
    expect(Array.from(sum.data as Float32Array)).toEqual([2, -2, 2, 2]);
    // RMS of [2, -2, 2, 2] is 2, so y = sum / 2 * gamma.
    Array.from(y.data as Float32Array).forEach((v, i) => expect(v).toBeCloseTo([1, -2, 3, 4][i], 4));
    expect(Array.from(shifted.data as Int32Array)).toEqual([7, 3, 7, 7]);
  });

  it('rejects duplicate value names at build time', () => {
    const g = new GraphBuilder('dup');
    g.input('x', OnnxDataType.FLOAT, [1]);
    expect(() => g.floats('x', [1], Float32Array.of(1))).toThrow(/duplicate/);
  });
});
