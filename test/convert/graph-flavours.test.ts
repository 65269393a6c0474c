/**
 * The converter's other graph flavours (`gqa`, `portable`; the committed model is `fused`)
 * meet the same decoder contract against the llama2.c reference on both runtimes, and each
 * flavour uses only the operator domains it claims.
 */
import * as ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';
import { describe, expect, it } from 'vitest';
import { encodeOnnxModel } from '../../src/graph/onnx-writer.js';
import { buildLlamaGraph, EXTRA_OPSETS, type GraphOps } from '../../src/graph/llama-onnx-graph.js';
import { decoderSemanticsTests } from './decoder-semantics.js';
import { loadSharedCheckpoint } from './model-paths.js';

ortWeb.env.wasm.numThreads = 1;

const built = new Map<GraphOps, Promise<{ bytes: Uint8Array; opTypes: Map<string, string> }>>();

/** Builds a flavour once per file; also returns each node's op type by domain. */
function flavour(ops: GraphOps) {
  let model = built.get(ops);
  if (!model) {
    model = loadSharedCheckpoint().then((ckpt) => {
      const graph = buildLlamaGraph(ckpt, { rmsNormEps: 1e-5, ops });
      const opTypes = new Map(graph.nodes.map((n) => [n.opType, n.domain ?? ''] as [string, string]));
      const bytes = encodeOnnxModel({
        irVersion: 8,
        opsetVersion: 17,
        producerName: 'test',
        producerVersion: '0',
        graph,
        extraOpsets: EXTRA_OPSETS[ops],
      });
      return { bytes, opTypes };
    });
    built.set(ops, model);
  }
  return model;
}

describe.each(['gqa', 'portable'] as const)('the %s graph', (ops) => {
  // GroupQueryAttention takes several new tokens on top of a cache for one row only.
  const options = { batchedMultiTokenSteps: ops !== 'gqa' };
  describe('on onnxruntime-node', () => decoderSemanticsTests(ortNode, async () => (await flavour(ops)).bytes, options));
  describe('on onnxruntime-web (WASM)', () =>
    decoderSemanticsTests(ortWeb, async () => (await flavour(ops)).bytes, options));
});

describe('operator domains', () => {
  it('portable uses standard ai.onnx ops only', async () => {
    const { opTypes } = await flavour('portable');
    expect([...opTypes.values()].every((domain) => domain === '')).toBe(true);
  });

  it('fused and gqa use the com.microsoft contrib ops they are named for', async () => {
    const fused = (await flavour('fused')).opTypes;
    expect(fused.get('SkipSimplifiedLayerNormalization')).toBe('com.microsoft');
    expect(fused.get('RotaryEmbedding')).toBe('com.microsoft');
    expect(fused.has('GroupQueryAttention')).toBe(false);
    const gqa = (await flavour('gqa')).opTypes;
    expect(gqa.get('GroupQueryAttention')).toBe('com.microsoft');
  });
});
