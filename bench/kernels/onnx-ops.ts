/**
 * One-op ONNX models for the kernel study: every quantized matrix product onnxruntime-node
 * 1.30 runs on CPU, at one weight shape [K in, N out], activations [M, K] with M symbolic.
 * Weights are seeded random bytes (a kernel's time does not depend on their values).
 *
 * The only import of the converter's graph code (it moves from scripts/convert to
 * src/convert: change this one line if it has moved).
 */
import { GraphBuilder } from '../../src/graph/graph-builder.js';
import { OnnxDataType, encodeOnnxModel, type OnnxTensor } from '../../src/graph/onnx-writer.js';

const MS_DOMAIN = 'com.microsoft';
// TensorProto.DataType INT8: the converter never stores int8, so its table lacks it.
const INT8 = 3 as OnnxDataType;

export type KernelForm =
  | { kind: 'fp32' }
  | { kind: 'nbits'; bits: 4 | 8; blockSize: 32 | 64 | 128; zeroPoints: boolean; accuracyLevel: 0 | 4 }
  | { kind: 'dynamic-quantize-matmul' }
  | { kind: 'matmul-integer' };

export function formLabel(form: KernelForm): string {
  switch (form.kind) {
    case 'fp32':
      return 'fp32 MatMul';
    case 'nbits':
      return `NBits${form.bits} b${form.blockSize}${form.zeroPoints ? ' zp' : ''} a${form.accuracyLevel}`;
    case 'dynamic-quantize-matmul':
      return 'DynQMatMul i8/ch';
    case 'matmul-integer':
      return 'MatMulInteger i8/ch';
  }
}

/** The forms the study times. */
export function kernelForms(): KernelForm[] {
  const forms: KernelForm[] = [{ kind: 'fp32' }];
  for (const blockSize of [32, 64, 128] as const)
    for (const zeroPoints of [false, true])
      for (const accuracyLevel of [0, 4] as const) forms.push({ kind: 'nbits', bits: 4, blockSize, zeroPoints, accuracyLevel });
  for (const blockSize of [32, 128] as const)
    for (const accuracyLevel of [0, 4] as const) forms.push({ kind: 'nbits', bits: 8, blockSize, zeroPoints: false, accuracyLevel });
  forms.push({ kind: 'dynamic-quantize-matmul' }, { kind: 'matmul-integer' });
  return forms;
}

/** xorshift32 bytes, the same for every run. */
function seededBytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** Small random floats (scales, fp32 weights) in about ±0.05. */
function seededFloats(length: number, seed: number): Float32Array {
  const bytes = seededBytes(length, seed);
  return Float32Array.from(bytes, (b) => (b - 127.5) / 2550);
}

/** The model's bytes: input `a` [M, K] float, output `y` [M, N] float. */
export function buildKernelModel(form: KernelForm, k: number, n: number): Uint8Array {
  const g = new GraphBuilder(`kernel-${form.kind}`);
  // GraphBuilder has typed helpers for float/int64 only: byte tensors join at build().
  const byteTensors: OnnxTensor[] = [];
  const raw = (name: string, dataType: OnnxDataType, dims: number[], rawData: Uint8Array) => {
    byteTensors.push({ name, dataType, dims, rawData });
    return name;
  };
  const a = g.input('a', OnnxDataType.FLOAT, ['M', k]);
  let y: string;
  const scope = '/kernel';
  switch (form.kind) {
    case 'fp32': {
      const w = g.floats('w', [k, n], seededFloats(k * n, 7));
      y = g.node('MatMul', [a, w], { scope, outputs: ['y'] })[0];
      break;
    }
    case 'nbits': {
      const { bits, blockSize, zeroPoints, accuracyLevel } = form;
      // K = 576 is 4.5 blocks of 128: MatMulNBits takes ceil(K / block) blocks, the last one padded.
      const blocks = Math.ceil(k / blockSize);
      const blobBytes = (blockSize * bits) / 8;
      const b = raw('b', OnnxDataType.UINT8, [n, blocks, blobBytes], seededBytes(n * blocks * blobBytes, 11));
      const scales = g.floats('scales', [n * blocks], seededFloats(n * blocks, 13));
      const inputs = [a, b, scales];
      if (zeroPoints) {
        // uint8 zero points, packed two 4-bit values a byte for bits = 4, one a byte for 8.
        const perRow = Math.ceil((blocks * bits) / 8);
        inputs.push(raw('zero_points', OnnxDataType.UINT8, [n * perRow], seededBytes(n * perRow, 17)));
      }
      y = g.node('MatMulNBits', inputs, {
        scope,
        domain: MS_DOMAIN,
        outputs: ['y'],
        attributes: { K: k, N: n, bits, block_size: blockSize, accuracy_level: accuracyLevel },
      })[0];
      break;
    }
    case 'dynamic-quantize-matmul': {
      // Per-channel symmetric int8 weights, activations quantized per call (uint8, dynamic range).
      const b = raw('b', INT8, [k, n], seededBytes(k * n, 19));
      const scale = g.floats('b_scale', [n], seededFloats(n, 23));
      y = g.node('DynamicQuantizeMatMul', [a, b, scale], { scope, domain: MS_DOMAIN, outputs: ['y'] })[0];
      break;
    }
    case 'matmul-integer': {
      // The standard-domain spelling of the same product; onnxruntime's optimizer may fuse it
      // back into DynamicQuantizeMatMul (the study times it at the session's 'all' level).
      const b = raw('b', INT8, [k, n], seededBytes(k * n, 19));
      const bZero = raw('b_zero_point', INT8, [n], new Uint8Array(n));
      const bScale = g.floats('b_scale', [n], seededFloats(n, 23));
      const [aq, aScale, aZero] = g.node('DynamicQuantizeLinear', [a], { scope, outputs: 3 });
      const product = g.op('MatMulInteger', [aq, b, aZero, bZero], scope);
      const asFloat = g.op('Cast', [product], scope, { to: OnnxDataType.FLOAT });
      const scaled = g.op('Mul', [asFloat, aScale], scope);
      y = g.node('Mul', [scaled, bScale], { scope, outputs: ['y'], label: 'MulChannel' })[0];
      break;
    }
  }
  g.output(y, OnnxDataType.FLOAT, ['M', n]);
  const graph = g.build();
  return encodeOnnxModel({
    irVersion: 8,
    opsetVersion: 17,
    producerName: 'edge-llm-kernel-study',
    producerVersion: '0',
    extraOpsets: { [MS_DOMAIN]: 1 },
    graph: { ...graph, initializers: [...graph.initializers, ...byteTensors] },
  });
}
