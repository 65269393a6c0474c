/**
 * Incremental builder for an ONNX graph: adds initializers and nodes with readable,
 * unique names (Optimum-style "/scope/Op" node names, "<node>_output_<i>" values).
 */
import {
  OnnxDataType,
  type OnnxAttribute,
  type OnnxAttributeValue,
  type OnnxDim,
  type OnnxGraph,
  type OnnxNode,
  type OnnxTensor,
  type OnnxValueInfo,
} from './onnx-writer.js';

export type Attributes = Readonly<Record<string, OnnxAttributeValue>>;

export class GraphBuilder {
  private readonly nodes: OnnxNode[] = [];
  private readonly initializers: OnnxTensor[] = [];
  private readonly inputs: OnnxValueInfo[] = [];
  private readonly outputs: OnnxValueInfo[] = [];
  private readonly usedNames = new Set<string>();
  private readonly constantsByKey = new Map<string, string>();

  constructor(private readonly name: string) {}

  input(name: string, elemType: OnnxDataType, shape: readonly OnnxDim[]): string {
    this.claim(name);
    this.inputs.push({ name, elemType, shape });
    return name;
  }

  output(name: string, elemType: OnnxDataType, shape: readonly OnnxDim[]): void {
    this.outputs.push({ name, elemType, shape });
  }

  floats(name: string, dims: readonly number[], data: Float32Array): string {
    if (data.length !== dims.reduce((a, b) => a * b, 1)) {
      throw new Error(`initializer ${name}: ${data.length} values for dims [${dims.join(', ')}]`);
    }
    return this.initializer(name, OnnxDataType.FLOAT, dims, littleEndianFloats(data));
  }

  /** A small shared constant, deduplicated by value (shape tensors, axes, scalars). */
  int64Constant(values: readonly number[], scalar = false): string {
    return this.integerConstant(OnnxDataType.INT64, values, scalar);
  }

  int32Constant(values: readonly number[], scalar = false): string {
    return this.integerConstant(OnnxDataType.INT32, values, scalar);
  }

  private integerConstant(
    dataType: typeof OnnxDataType.INT64 | typeof OnnxDataType.INT32,
    values: readonly number[],
    scalar: boolean,
  ): string {
    const bits = dataType === OnnxDataType.INT64 ? 64 : 32;
    const key = `i${bits}:${scalar}:${values.join(',')}`;
    const existing = this.constantsByKey.get(key);
    if (existing) return existing;
    if (scalar && values.length !== 1) throw new Error('a scalar holds exactly one value');
    const bytes = new Uint8Array(values.length * (bits / 8));
    const view = new DataView(bytes.buffer);
    values.forEach((v, i) => (bits === 64 ? view.setBigInt64(i * 8, BigInt(v), true) : view.setInt32(i * 4, v, true)));
    const name = this.initializer(
      `const_i${bits}_${scalar ? 'scalar_' : ''}${values.join('_').replaceAll('-', 'm')}`,
      dataType,
      scalar ? [] : [values.length],
      bytes,
    );
    this.constantsByKey.set(key, name);
    return name;
  }

  floatScalar(label: string, value: number): string {
    const key = `f32:${Object.is(value, -0) ? '-0' : value}`;
    const existing = this.constantsByKey.get(key);
    if (existing) return existing;
    const bytes = littleEndianFloats(Float32Array.of(value));
    const name = this.initializer(`const_f32_${label}`, OnnxDataType.FLOAT, [], bytes);
    this.constantsByKey.set(key, name);
    return name;
  }

  /** Adds a node; returns its output names. */
  node(
    opType: string,
    inputs: readonly string[],
    options: {
      scope: string;
      attributes?: Attributes;
      outputs?: number | readonly string[];
      label?: string;
      domain?: string;
    },
  ): string[] {
    const name = this.uniqueNodeName(`${options.scope}/${options.label ?? opType}`);
    const outputs =
      typeof options.outputs === 'object'
        ? [...options.outputs]
        : Array.from({ length: options.outputs ?? 1 }, (_, i) => `${name}_output_${i}`);
    // An empty name leaves an optional output unused (ONNX convention).
    for (const o of outputs) if (o !== '') this.claim(o);
    const attributes: OnnxAttribute[] = Object.entries(options.attributes ?? {}).map(([n, value]) => ({
      name: n,
      value,
    }));
    const domain = options.domain ? { domain: options.domain } : {};
    this.nodes.push({ opType, name, inputs, outputs, attributes, ...domain });
    return outputs;
  }

  /** Single-output shorthand for node(). */
  op(opType: string, inputs: readonly string[], scope: string, attributes?: Attributes, label?: string): string {
    return this.node(opType, inputs, { scope, attributes, label })[0];
  }

  build(): OnnxGraph {
    return {
      name: this.name,
      nodes: this.nodes,
      initializers: this.initializers,
      inputs: this.inputs,
      outputs: this.outputs,
    };
  }

  private initializer(name: string, dataType: OnnxDataType, dims: readonly number[], rawData: Uint8Array): string {
    this.claim(name);
    this.initializers.push({ name, dataType, dims, rawData });
    return name;
  }

  private uniqueNodeName(base: string): string {
    let name = base;
    for (let i = 1; this.usedNames.has(name); i++) name = `${base}_${i}`;
    this.usedNames.add(name);
    return name;
  }

  private claim(valueName: string): void {
    if (this.usedNames.has(valueName)) throw new Error(`duplicate ONNX name: ${valueName}`);
    this.usedNames.add(valueName);
  }
}

function littleEndianFloats(data: Float32Array): Uint8Array {
  const bytes = new Uint8Array(data.length * 4);
  const view = new DataView(bytes.buffer);
  data.forEach((v, i) => view.setFloat32(i * 4, v, true));
  return bytes;
}
