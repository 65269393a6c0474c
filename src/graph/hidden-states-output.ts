/**
 * A decoder graph turned into an embedding model's: the final norm's output leaves as
 * `last_hidden_state` [batch, sequence, hidden] in place of the lm_head's logits (as
 * llama.cpp's --embedding reads the last layer's normed states, and transformers' Qwen3Model
 * returns them), so the pooling of src/embeddings/ runs on it. A rewrite of the built graph,
 * like logits-to-keep.ts: the lm_head (and its num_logits_to_keep slice, when the graph has
 * one) goes, with the initializers only it read.
 */
import { LOGITS_TO_KEEP_INPUT } from './logits-to-keep.js';
import { OnnxDataType, type OnnxGraph, type OnnxNode } from './onnx-writer.js';
import { DIM_NAMES } from './llama-graph-io.js';

export const HIDDEN_STATES_OUTPUT = 'last_hidden_state';

export function withHiddenStatesOutput(graph: OnnxGraph, hiddenSize: number): OnnxGraph {
  const head = graph.nodes.find((node) => node.outputs.includes('logits'));
  if (head === undefined) throw new Error('the graph has no node writing "logits"');
  const removed = new Set<OnnxNode>([head]);
  let hidden = head.inputs[0]!;
  // num_logits_to_keep's Slice sits between the final norm and the lm_head: read above it, drop its nodes.
  if (graph.inputs.some((input) => input.name === LOGITS_TO_KEEP_INPUT)) {
    const slice = graph.nodes.find((node) => node.outputs.includes(hidden) && node.opType === 'Slice');
    if (slice === undefined) throw new Error('the num_logits_to_keep slice is missing before the lm_head');
    hidden = slice.inputs[0]!;
    const producers = new Map(graph.nodes.flatMap((node) => node.outputs.map((output) => [output, node] as const)));
    const queue = slice.inputs.slice(1);
    removed.add(slice);
    while (queue.length > 0) {
      const producer = producers.get(queue.pop()!);
      if (producer === undefined || removed.has(producer)) continue;
      removed.add(producer);
      queue.push(...producer.inputs);
    }
  }
  const identity: OnnxNode = { opType: 'Identity', name: '/embedding/last_hidden_state', inputs: [hidden], outputs: [HIDDEN_STATES_OUTPUT], attributes: [] };
  const nodes = [...graph.nodes.filter((node) => !removed.has(node)), identity];
  const used = new Set(nodes.flatMap((node) => node.inputs));
  return {
    ...graph,
    nodes,
    initializers: graph.initializers.filter((tensor) => used.has(tensor.name)),
    inputs: graph.inputs.filter((input) => input.name !== LOGITS_TO_KEEP_INPUT),
    outputs: [
      { name: HIDDEN_STATES_OUTPUT, elemType: OnnxDataType.FLOAT, shape: [DIM_NAMES.batch, DIM_NAMES.sequence, hiddenSize] },
      ...graph.outputs.filter((output) => output.name !== 'logits'),
    ],
  };
}
