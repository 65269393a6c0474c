/**
 * The `num_logits_to_keep` input of the converter's graphs, as transformers.js' exports of
 * some models carry it and transformers' `logits_to_keep` means it: an int64 scalar N, the
 * lm_head runs over the last N fed positions of every row only, and 0 keeps them all
 * (Slice from -0 = from 0). A prefill asks for 1, so a 128-token prompt on a 49152-piece
 * vocabulary projects one row instead of 128 (about a fifth of a 135M model's prefill work)
 * and onnxruntime hands back vocab floats instead of 128 x vocab.
 *
 * "Last N of every row" is enough for this engine: it prefills each prompt alone (a batch of
 * one, no padding) and a multi-token step on a batch (speculative decoding) reads every fed
 * position; in a left-padded batch the last position is every row's last real token too.
 *
 * A rewrite of the built graph (like the dtype passes): the Slice goes right before the
 * node that writes `logits`, on its hidden-state input, so every flavour and every weight
 * dtype (the q4 pass rewrites that MatMul in place) gets it the same way.
 */
import { OnnxDataType, type OnnxGraph, type OnnxNode, type OnnxTensor } from './onnx-writer.js';

export const LOGITS_TO_KEEP_INPUT = 'num_logits_to_keep';
/** The logits' sequence axis: `sequence_length`, or fewer when num_logits_to_keep asks. */
export const KEPT_LOGITS_DIM = 'logits_sequence_length';

const INT64_MAX = 9223372036854775807n;

function int64Tensor(name: string, values: readonly bigint[], dims: readonly number[]): OnnxTensor {
  const rawData = new Uint8Array(values.length * 8);
  const view = new DataView(rawData.buffer);
  values.forEach((value, i) => view.setBigInt64(i * 8, value, true));
  return { name, dataType: OnnxDataType.INT64, dims, rawData };
}

/** The graph with a num_logits_to_keep input selecting which positions the lm_head projects. */
export function withLogitsToKeep(graph: OnnxGraph): OnnxGraph {
  const headIndex = graph.nodes.findIndex((node) => node.outputs.includes('logits'));
  if (headIndex < 0) throw new Error('the graph has no node writing "logits"');
  if (graph.inputs.some((input) => input.name === LOGITS_TO_KEEP_INPUT)) throw new Error(`the graph already has a "${LOGITS_TO_KEEP_INPUT}" input`);
  const head = graph.nodes[headIndex];
  const scope = '/lm_head/keep';
  const names = {
    scalarAxes: `${scope}/scalar_axes`,
    axes: `${scope}/axes`,
    end: `${scope}/end`,
    count: `${scope}/count`,
    start: `${scope}/start`,
    kept: `${scope}/hidden_states`,
  };
  const node = (opType: string, inputs: string[], output: string): OnnxNode => ({
    opType,
    name: `${scope}/${opType}`,
    inputs,
    outputs: [output],
    attributes: [],
  });
  const keepNodes = [
    node('Unsqueeze', [LOGITS_TO_KEEP_INPUT, names.scalarAxes], names.count),
    node('Neg', [names.count], names.start),
    // [B, S, hidden] -> [B, min(N, S) or S, hidden]: starts past the front clamp to 0.
    node('Slice', [head.inputs[0], names.start, names.end, names.axes], names.kept),
  ];
  const projected: OnnxNode = { ...head, inputs: [names.kept, ...head.inputs.slice(1)] };
  return {
    ...graph,
    nodes: [...graph.nodes.slice(0, headIndex), ...keepNodes, projected, ...graph.nodes.slice(headIndex + 1)],
    initializers: [
      ...graph.initializers,
      int64Tensor(names.scalarAxes, [0n], [1]),
      int64Tensor(names.axes, [1n], [1]),
      int64Tensor(names.end, [INT64_MAX], [1]),
    ],
    inputs: [...graph.inputs, { name: LOGITS_TO_KEEP_INPUT, elemType: OnnxDataType.INT64, shape: [] }],
    outputs: graph.outputs.map((output) =>
      output.name === 'logits' ? { ...output, shape: output.shape.map((dim, axis) => (axis === 1 ? KEPT_LOGITS_DIM : dim)) } : output,
    ),
  };
}
