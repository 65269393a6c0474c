/**
 * float16 tensors through onnxruntime-node on whichever Node runs the suite: on Node 24 (a
 * global Float16Array) onnxruntime-node 1.30 refused every float16 input, which broke every
 * fp16-KV / fp16-logits export at load. .ci/run runs this file on Node 20 and on Node 24.
 */
import { describe, expect, it } from 'vitest';
import { encodeOnnxModel, OnnxDataType } from '../../src/graph/onnx-writer.js';
import { float32Of, float32ToFloat16 } from '../../src/onnx/float16.js';
import { loadOnnxruntimeNode } from '../../src/onnx/ort-native.js';

/** y = x + x in float16: exact for these values, so the expected output is plain arithmetic. */
const doubling = encodeOnnxModel({
  irVersion: 8,
  opsetVersion: 17,
  producerName: 'edge-llm-test',
  producerVersion: '0',
  graph: {
    name: 'double',
    nodes: [{ opType: 'Add', name: 'add', inputs: ['x', 'x'], outputs: ['y'] }],
    initializers: [],
    inputs: [{ name: 'x', elemType: OnnxDataType.FLOAT16, shape: [2, 'n'] }],
    outputs: [{ name: 'y', elemType: OnnxDataType.FLOAT16, shape: [2, 'n'] }],
  },
});

const values = Float32Array.of(1.5, -0.25, 3, 0.125, 1024, -7.5);

describe(`float16 tensors on onnxruntime-node (Node ${process.versions.node}, Float16Array ${'Float16Array' in globalThis ? 'present' : 'absent'})`, () => {
  it('runs a float16 input given as bits, and feeds its float16 output back in as the next input (as the KV cache does)', async () => {
    const ort = await loadOnnxruntimeNode();
    const session = await ort.InferenceSession.create(doubling);
    const first = await session.run({ x: new ort.Tensor('float16', float32ToFloat16(values), [2, 3]) });
    expect(Array.from(float32Of(first.y.data as Uint16Array))).toEqual(Array.from(values, (v) => v * 2));
    const second = await session.run({ x: first.y });
    expect(Array.from(float32Of(second.y.data as Uint16Array))).toEqual(Array.from(values, (v) => v * 4));
    await session.release();
  });
});
