/** Builds the decoder graph of a llama2.c checkpoint in the chosen flavour (see llama-graph-io.ts for its interface). */
import type { DecoderCheckpoint } from './decoder-checkpoint.js';
import type { OnnxGraph } from './onnx-writer.js';
import { buildFusedLlamaGraph } from './llama-graph-fused.js';
import { buildGqaLlamaGraph } from './llama-graph-gqa.js';
import { buildInplaceLlamaGraph } from './llama-graph-inplace.js';
import { buildPortableLlamaGraph } from './llama-graph-portable.js';
import { withLogitsToKeep } from './logits-to-keep.js';

/**
 * Graph flavours; all have the same interface and logits. A decode step of this model costs
 * about the same per node whatever the node does, so they differ in node count:
 * - `fused` (default): com.microsoft SkipSimplifiedLayerNormalization and RotaryEmbedding
 *   around plain-op attention (llama-graph-fused.ts);
 * - `gqa`: the same with one com.microsoft GroupQueryAttention per layer, the fewest nodes:
 *   fastest for a single stream, slower than `fused` from a few concurrent streams, and
 *   unable to run several new tokens per row on a cache for more than one row;
 * - `portable`: standard ai.onnx opset-17 ops only, for runtimes without onnxruntime's
 *   contrib ops;
 * - `inplace`: the `fused` math over a cache the engine keeps and writes in place: the graph
 *   reads past_key_values (with room to grow) and outputs only the new slots, every
 *   layer's in one new_key_values, so a step never copies the cache (llama-graph-inplace.ts). Not the
 *   Hugging Face I/O contract: only this engine feeds it (the other three keep that contract).
 * onnxruntime-node and onnxruntime-web (WASM) run all four.
 */
export type GraphOps = 'fused' | 'gqa' | 'portable' | 'inplace';
export const GRAPH_OPS: readonly GraphOps[] = ['fused', 'gqa', 'portable', 'inplace'];

export interface LlamaGraphOptions {
  rmsNormEps: number;
  ops: GraphOps;
  /**
   * Adds the num_logits_to_keep input (logits-to-keep.ts; default true): an export for
   * runtimes that feed only the Optimum inputs leaves it out and gets every position's logits.
   */
  logitsToKeep?: boolean;
}

/** Operator set domains (besides ai.onnx) each flavour's nodes use. */
export const EXTRA_OPSETS: Record<GraphOps, Record<string, number>> = {
  fused: { 'com.microsoft': 1 },
  gqa: { 'com.microsoft': 1 },
  portable: {},
  inplace: { 'com.microsoft': 1 },
};

export function buildLlamaGraph(ckpt: DecoderCheckpoint, options: LlamaGraphOptions): OnnxGraph {
  const build = { fused: buildFusedLlamaGraph, gqa: buildGqaLlamaGraph, portable: buildPortableLlamaGraph, inplace: buildInplaceLlamaGraph }[options.ops];
  if (options.ops !== 'fused' && options.ops !== 'inplace') {
    const only = (what: string) => new Error(`${what} are built in the fused and inplace flavours only, not ${options.ops}`);
    if (ckpt.layers.some((layer) => layer.attentionBias)) throw only('q/k/v projection biases');
    if (ckpt.layers.some((layer) => layer.qkNorm)) throw only('per-head q/k norms');
    if (ckpt.headDim * ckpt.header.nHeads !== ckpt.header.dim) throw only('heads whose size is not hidden / heads');
  }
  const graph = build(ckpt, options.rmsNormEps);
  return options.logitsToKeep === false ? graph : withLogitsToKeep(graph);
}
