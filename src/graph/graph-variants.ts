/**
 * Rewrites a decoder graph into the I/O layouts other exporters produce, so the engine can
 * be tested on each without downloading a model: float16 KV cache and logits (fp16 / q4f16
 * exports), int32 ids, no position_ids input (positions computed inside the graph from the
 * attention mask or from the past length), a num_logits_to_keep / logits_to_keep input,
 * Optimum's use_cache_branch flag, extra inputs, dynamic int8 MatMuls
 * (DynamicQuantizeLinear + MatMulInteger, as onnxruntime's quantize_dynamic writes them),
 * and weights moved to external data files.
 *
 * Each rewrite keeps the graph's math: a cast on the way in and out, or nodes computing
 * what an input used to carry.
 */
import { OnnxDataType, type OnnxGraph, type OnnxNode, type OnnxTensor, type OnnxValueInfo } from './onnx-writer.js';

export interface DecoderLayoutOptions {
  /** bfloat16: a type the engine does not feed (for its refusal test). */
  kvType?: 'float32' | 'float16' | 'bfloat16';
  logitsType?: 'float32' | 'float16';
  idsType?: 'int64' | 'int32';
  /** Where positions come from: the position_ids input (default), or computed in the graph. */
  positions?: 'input' | 'from-mask' | 'from-past-length';
  /** Adds this input (int64 scalar): logits only for the last N positions. */
  logitsToKeep?: 'num_logits_to_keep' | 'logits_to_keep';
  /** Adds Optimum's use_cache_branch input (bool [1]); the graph does not need it. */
  useCacheBranch?: boolean;
  /** Inputs the graph declares but does not use (a contract the engine does not know). */
  extraInputs?: OnnxValueInfo[];
  /** Every MatMul with a weight initializer becomes a dynamically quantised int8 one. */
  dynamicInt8?: boolean;
  /**
   * An in-place graph's new slots as one output per layer and kind (new_key_values.N.key /
   * .value), the `inplace` flavour's first form, instead of its one packed output.
   */
  newKvPerLayer?: boolean;
}

const INT64_MAX = 9223372036854775807n;

class GraphEdit {
  nodes: OnnxNode[];
  initializers: OnnxTensor[];
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
  private counter = 0;

  constructor(private readonly graph: OnnxGraph) {
    this.nodes = [...graph.nodes];
    this.initializers = [...graph.initializers];
    this.inputs = [...graph.inputs];
    this.outputs = [...graph.outputs];
  }

  /** Nodes reading `from` read `to` instead. */
  redirectConsumers(from: string, to: string): void {
    this.nodes = this.nodes.map((node) =>
      node.inputs.includes(from) ? { ...node, inputs: node.inputs.map((input) => (input === from ? to : input)) } : node,
    );
  }

  /** The node writing `from` writes `to` instead. */
  renameProducerOutput(from: string, to: string): void {
    this.nodes = this.nodes.map((node) =>
      node.outputs.includes(from) ? { ...node, outputs: node.outputs.map((output) => (output === from ? to : output)) } : node,
    );
  }

  add(opType: string, inputs: string[], attributes: Record<string, unknown> = {}, outputs?: string[], domain?: string): string[] {
    const name = `/layout/${opType}_${this.counter++}`;
    const outs = outputs ?? [`${name}_output_0`];
    this.nodes.push({
      opType,
      name,
      inputs,
      outputs: outs,
      attributes: Object.entries(attributes).map(([key, value]) => ({ name: key, value: value as never })),
      ...(domain ? { domain } : {}),
    });
    return outs;
  }

  int64s(values: readonly (number | bigint)[], scalar = false): string {
    const bytes = new Uint8Array(values.length * 8);
    const view = new DataView(bytes.buffer);
    values.forEach((v, i) => view.setBigInt64(i * 8, BigInt(v), true));
    return this.constant(OnnxDataType.INT64, scalar ? [] : [values.length], bytes);
  }

  floats(values: Float32Array, dims: readonly number[]): string {
    const bytes = new Uint8Array(values.length * 4);
    const view = new DataView(bytes.buffer);
    values.forEach((v, i) => view.setFloat32(i * 4, v, true));
    return this.constant(OnnxDataType.FLOAT, dims, bytes);
  }

  constant(dataType: OnnxDataType, dims: readonly number[], rawData: Uint8Array): string {
    const name = `layout_const_${this.counter++}`;
    this.initializers.push({ name, dataType, dims, rawData });
    return name;
  }

  retypeInput(name: string, elemType: OnnxDataType, innerType: OnnxDataType): void {
    const index = this.inputs.findIndex((input) => input.name === name);
    if (index < 0) return;
    const inner = `${name}/as_${innerType}`;
    this.redirectConsumers(name, inner);
    this.add('Cast', [name], { to: innerType }, [inner]);
    this.inputs[index] = { ...this.inputs[index], elemType };
  }

  retypeOutput(name: string, elemType: OnnxDataType): void {
    const index = this.outputs.findIndex((output) => output.name === name);
    if (index < 0) return;
    const inner = `${name}/computed`;
    this.renameProducerOutput(name, inner);
    this.redirectConsumers(name, inner);
    this.add('Cast', [inner], { to: elemType }, [name]);
    this.outputs[index] = { ...this.outputs[index], elemType };
  }

  build(): OnnxGraph {
    return { name: this.graph.name, nodes: this.nodes, initializers: this.initializers, inputs: this.inputs, outputs: this.outputs };
  }
}

export function rewriteDecoderLayout(graph: OnnxGraph, options: DecoderLayoutOptions): OnnxGraph {
  const edit = new GraphEdit(graph);
  if (options.dynamicInt8) quantizeMatMulsDynamically(edit);

  if (options.positions === 'from-mask' || options.positions === 'from-past-length') {
    edit.inputs = edit.inputs.filter((input) => input.name !== 'position_ids');
    const queryLength = edit.add('Shape', ['input_ids'], { start: 1, end: 2 })[0];
    if (options.positions === 'from-mask') {
      // As transformers builds them for a padded batch: cumsum(mask) - 1, padding clamped
      // to 0, the last S columns.
      const mask = edit.add('Cast', ['attention_mask'], { to: OnnxDataType.INT64 })[0];
      const cumsum = edit.add('CumSum', [mask, edit.int64s([1], true)])[0];
      const minusOne = edit.add('Sub', [cumsum, edit.int64s([1], true)])[0];
      const clamped = edit.add('Max', [minusOne, edit.int64s([0], true)])[0];
      const start = edit.add('Neg', [queryLength])[0];
      edit.add('Slice', [clamped, start, edit.int64s([INT64_MAX]), edit.int64s([1])], {}, ['position_ids']);
    } else {
      // past_length + arange(S) for every row, whatever its padding.
      const pastLength = edit.add('Shape', ['past_key_values.0.key'], { start: 2, end: 3 })[0];
      const end = edit.add('Add', [pastLength, queryLength])[0];
      const axes = edit.int64s([0]);
      const range = edit.add('Range', [
        edit.add('Squeeze', [pastLength, axes])[0],
        edit.add('Squeeze', [end, axes])[0],
        edit.int64s([1], true),
      ])[0];
      const row = edit.add('Unsqueeze', [range, axes])[0];
      edit.add('Expand', [row, edit.add('Shape', ['input_ids'])[0]], {}, ['position_ids']);
    }
  }

  if (options.logitsToKeep) {
    const name = options.logitsToKeep;
    edit.inputs.push({ name, elemType: OnnxDataType.INT64, shape: [] });
    edit.renameProducerOutput('logits', 'logits/all_positions');
    const keep = edit.add('Unsqueeze', [name, edit.int64s([0])])[0];
    const start = edit.add('Neg', [keep])[0];
    edit.add('Slice', ['logits/all_positions', start, edit.int64s([INT64_MAX]), edit.int64s([1])], {}, ['logits']);
  }

  if (options.newKvPerLayer) unpackNewKv(edit);
  if (options.useCacheBranch) edit.inputs.push({ name: 'use_cache_branch', elemType: OnnxDataType.BOOL, shape: [1] });
  for (const extra of options.extraInputs ?? []) edit.inputs.push(extra);

  if (options.idsType === 'int32') {
    for (const name of ['input_ids', 'attention_mask', 'position_ids']) edit.retypeInput(name, OnnxDataType.INT32, OnnxDataType.INT64);
  }
  if (options.kvType === 'float16' || options.kvType === 'bfloat16') {
    const type = options.kvType === 'float16' ? OnnxDataType.FLOAT16 : OnnxDataType.BFLOAT16;
    for (const input of [...edit.inputs]) {
      if (input.name.startsWith('past_key_values.')) edit.retypeInput(input.name, type, OnnxDataType.FLOAT);
    }
    for (const output of [...edit.outputs]) {
      if (output.name.startsWith('present.') || output.name.startsWith('new_key_values')) edit.retypeOutput(output.name, type);
    }
  }
  if (options.logitsType === 'float16') edit.retypeOutput('logits', OnnxDataType.FLOAT16);
  return edit.build();
}

/** The packed new_key_values output's Concat goes; the values it joined become the outputs. */
function unpackNewKv(edit: GraphEdit): void {
  const packed = edit.outputs.find((output) => output.name === 'new_key_values');
  const concat = edit.nodes.find((node) => node.outputs.includes('new_key_values'));
  if (!packed || !concat) throw new Error('newKvPerLayer: the graph has no packed new_key_values output');
  edit.nodes = edit.nodes.filter((node) => node !== concat);
  const [, ...slotDims] = packed.shape;
  edit.outputs = edit.outputs.flatMap((output) =>
    output === packed ? concat.inputs.map((name) => ({ ...packed, name, shape: ['batch_size', ...slotDims] })) : [output],
  );
}

/**
 * y = MatMul(x, W) becomes DynamicQuantizeLinear(x) → MatMulInteger with W quantised per
 * tensor to uint8 → Cast → scale: x's scale is computed over the whole input tensor, so in a
 * batch each row's result depends on the other rows (the reason batching changes outputs).
 */
function quantizeMatMulsDynamically(edit: GraphEdit): void {
  const weights = new Map(edit.initializers.map((tensor) => [tensor.name, tensor]));
  const originals = edit.nodes;
  edit.nodes = [];
  for (const node of originals) {
    const weight = node.opType === 'MatMul' ? weights.get(node.inputs[1]) : undefined;
    if (!weight || weight.dataType !== OnnxDataType.FLOAT || weight.dims.length !== 2) {
      edit.nodes.push(node);
      continue;
    }
    const values = new Float32Array(weight.rawData.slice().buffer);
    let maxAbs = 0;
    for (const v of values) maxAbs = Math.max(maxAbs, Math.abs(v));
    const scale = maxAbs / 127 || 1;
    const quantized = Uint8Array.from(values, (v) => Math.max(0, Math.min(255, Math.round(v / scale) + 128)));
    const wq = edit.constant(OnnxDataType.UINT8, weight.dims, quantized);
    const wZero = edit.constant(OnnxDataType.UINT8, [], Uint8Array.of(128));
    const [xq, xScale, xZero] = edit.add('DynamicQuantizeLinear', [node.inputs[0]], {}, [
      `${node.name}/xq`,
      `${node.name}/x_scale`,
      `${node.name}/x_zero`,
    ]);
    const product = edit.add('MatMulInteger', [xq, wq, xZero, wZero])[0];
    const asFloat = edit.add('Cast', [product], { to: OnnxDataType.FLOAT })[0];
    const scaled = edit.add('Mul', [asFloat, xScale])[0];
    edit.add('Mul', [scaled, edit.floats(Float32Array.of(scale), [])], {}, [...node.outputs]);
  }
}

/**
 * Moves every initializer of at least `minBytes` into external data files named
 * `location`, `location_1`, ... of at most `maxFileBytes` each (as exporters split them).
 */
export function moveWeightsToExternalData(
  graph: OnnxGraph,
  location: string,
  options: { minBytes?: number; maxFileBytes?: number } = {},
): { graph: OnnxGraph; files: Array<{ name: string; data: Uint8Array }> } {
  const minBytes = options.minBytes ?? 1024;
  const maxFileBytes = options.maxFileBytes ?? Number.MAX_SAFE_INTEGER;
  const files: Array<{ name: string; chunks: Uint8Array[]; size: number }> = [];
  const initializers = graph.initializers.map((tensor) => {
    if (tensor.rawData.byteLength < minBytes) return tensor;
    let file = files.at(-1);
    if (!file || (file.size > 0 && file.size + tensor.rawData.byteLength > maxFileBytes)) {
      file = { name: files.length === 0 ? location : `${location}_${files.length}`, chunks: [], size: 0 };
      files.push(file);
    }
    // Exporters align each tensor; onnxruntime accepts any offset, and 64 keeps mmap happy.
    const padding = (64 - (file.size % 64)) % 64;
    if (padding > 0) {
      file.chunks.push(new Uint8Array(padding));
      file.size += padding;
    }
    const external = { location: file.name, offset: file.size, length: tensor.rawData.byteLength };
    file.chunks.push(tensor.rawData);
    file.size += tensor.rawData.byteLength;
    return { ...tensor, rawData: new Uint8Array(0), external };
  });
  return {
    graph: { ...graph, initializers },
    files: files.map(({ name, chunks, size }) => {
      const data = new Uint8Array(size);
      let at = 0;
      for (const chunk of chunks) {
        data.set(chunk, at);
        at += chunk.byteLength;
      }
      return { name, data };
    }),
  };
}
