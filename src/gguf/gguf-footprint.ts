/**
 * How much memory a GGUF takes in a home that builds its graph in memory and keeps the
 * file's bytes resident (a workerd isolate, whose GGUF is a bundled module): read from the
 * header alone, before any weight is read, so a home with a memory cap can refuse a file
 * that would not fit, with the figures, instead of dying half-way through the build.
 *
 * An upper estimate, not a measurement: its parts follow what the build holds at once
 * (gguf-model.ts builds the whole graph in float32 once per pass: values, then scales,
 * then minimums, beside the quantized result), and test/gguf/gguf-footprint.test.ts
 * checks that it bounds the live memory measured while the fixtures are built.
 */
import type { GgufGraphOptions, GgufModel } from './gguf-model.js';
import { ggufGraphPasses } from './gguf-model.js';

/** Types kept as 4-bit codes by quantized-weights.ts (Q2_K's and Q3_K's 2-3 bit integers too); the other quantized types, IQ4's levels included, take 8 bits. */
const FOUR_BIT_TYPES = new Set(['Q4_0', 'Q4_1', 'Q2_K', 'Q3_K', 'Q4_K']);

/** The build's fixed share: tokenizer and template objects, the graph's nodes, the encoder's buffers. */
export const BUILD_FIXED_BYTES = 8 * 1024 ** 2;

export interface GgufFootprint {
  /** The file itself (resident where it is a bundled module). */
  fileBytes: number;
  /** Weights in the file (elements of every tensor). */
  weights: number;
  /** The graph's weights as executed: the external data onnxruntime loads. */
  graphWeightBytes: number;
  /** What building the graph holds at its peak (the float32 passes, the quantized result). */
  buildBytes: number;
  /** What serving holds besides the file: onnxruntime's copy of the weights and its prepacked one. */
  servingBytes: number;
}

/** Bytes a tensor takes in the graph: quantized codes (4 or 8 bits) with a float scale and min per block, or float32. */
function graphBytesOf(type: string, elements: number, isMatrix: boolean, options: GgufGraphOptions): number {
  const quantized = options.weights === 'quantized' && isMatrix && type !== 'F32' && type !== 'F16' && type !== 'BF16';
  if (!quantized) return 4 * elements;
  // Codes, plus a scale and a min (float32) and a zero point per block of 16 (the smallest block).
  return elements * (FOUR_BIT_TYPES.has(type) ? 0.5 : 1) + elements * (9 / 16);
}

export function ggufFootprint(model: GgufModel, options: GgufGraphOptions): GgufFootprint {
  let weights = 0;
  let graphWeightBytes = 0;
  for (const tensor of model.file.tensors) {
    const elements = tensor.dims.reduce((product, dim) => product * dim, 1);
    weights += elements;
    graphWeightBytes += graphBytesOf(tensor.type?.name ?? 'F32', elements, tensor.dims.length === 2, options);
  }
  // The graph's rotary tables (cos and sin, float32, a row per position): not in the file.
  graphWeightBytes += 2 * model.shape.contextLength * (model.shape.headDim / 2) * 4;
  // One float32 graph per pass, the float32 graph being turned into codes, and the result.
  const buildBytes = 4 * weights * (ggufGraphPasses(model, options) + 1) + graphWeightBytes + BUILD_FIXED_BYTES;
  return {
    fileBytes: model.file.source.size,
    weights,
    graphWeightBytes: Math.ceil(graphWeightBytes),
    buildBytes: Math.ceil(buildBytes),
    servingBytes: Math.ceil(2 * graphWeightBytes),
  };
}
