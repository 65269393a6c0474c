/**
 * The GroupQueryAttention graph over the in-place KV contract (buildGqaInplaceLlamaGraph, a
 * measured alternative for issue #38's decode step, not a served flavour): greedy output
 * equals llama2.c's own (golden-greedy.json) alone, and for a left-padded row beside a
 * shorter prompt, decoding one token per row on a cache the caller keeps; on onnxruntime-node
 * and onnxruntime-web (WASM).
 */
import { readFile } from 'node:fs/promises';
import * as ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';
import type * as ort from 'onnxruntime-common';
import { describe, expect, it } from 'vitest';
import { buildGqaInplaceLlamaGraph } from '../../src/graph/llama-graph-gqa.js';
import { encodeOnnxModel, ONNX_IR_VERSION, ONNX_OPSET } from '../../src/graph/onnx-writer.js';
import { loadSharedCheckpoint, sharedModelFile } from './model-paths.js';

interface Golden {
  prompt_ids: number[];
  completion_ids: number[];
}

/** Greedy decoding of left-padded rows with a cache kept here, grown by each step's new_key_values. */
async function greedyRows(Tensor: typeof ort.Tensor, session: ort.InferenceSession, prompts: number[][], steps: number, shape: { layers: number; kvHeads: number; headDim: number }) {
  const { layers, kvHeads, headDim } = shape;
  const rows = prompts.length;
  const width = Math.max(...prompts.map((p) => p.length));
  // Per layer and kind, per row: [kvHeads][slots][headDim], slots in column order.
  let cache: Float32Array[] = Array.from({ length: 2 * layers }, () => new Float32Array(0));
  let slots = 0;
  const mask: number[][] = prompts.map((p) => [...Array(width - p.length).fill(0), ...p.map(() => 1)]);
  const positions = prompts.map((p) => p.length);
  const outputs: number[][] = prompts.map(() => []);
  let fed = prompts.map((p) => [...Array(width - p.length).fill(0), ...p]);
  let fedPositions = prompts.map((p) => [...Array(width - p.length).fill(0), ...p.map((_, i) => i)]);
  for (let step = 0; step < steps; step++) {
    const s = fed[0].length;
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new Tensor('int64', BigInt64Array.from(fed.flat(), BigInt), [rows, s]),
      attention_mask: new Tensor('int64', BigInt64Array.from(mask.flat(), BigInt), [rows, slots + s]),
      position_ids: new Tensor('int64', BigInt64Array.from(fedPositions.flat(), BigInt), [rows, s]),
    };
    if (session.inputNames.includes('num_logits_to_keep')) feeds.num_logits_to_keep = new Tensor('int64', BigInt64Array.of(1n), []);
    for (let l = 0; l < layers; l++) {
      feeds[`past_key_values.${l}.key`] = new Tensor('float32', cache[2 * l], [rows, kvHeads, slots, headDim]);
      feeds[`past_key_values.${l}.value`] = new Tensor('float32', cache[2 * l + 1], [rows, kvHeads, slots, headDim]);
    }
    const out = await session.run(feeds);
    const logits = out.logits.data as Float32Array;
    const vocab = out.logits.dims[2];
    const keep = out.logits.dims[1];
    const next = Array.from({ length: rows }, (_, r) => {
      const row = logits.subarray((r * keep + keep - 1) * vocab, (r * keep + keep) * vocab);
      let best = 0;
      for (let i = 1; i < vocab; i++) if (row[i] > row[best]) best = i;
      return best;
    });
    // Block 2l + kind of new_key_values is [rows, kvHeads, s, headDim]: append on the slot axis.
    const added = out.new_key_values.data as Float32Array;
    const block = rows * kvHeads * s * headDim;
    cache = cache.map((old, b) => {
      const grown = new Float32Array(rows * kvHeads * (slots + s) * headDim);
      for (let r = 0; r < rows; r++) {
        for (let h = 0; h < kvHeads; h++) {
          const at = ((r * kvHeads + h) * (slots + s)) * headDim;
          grown.set(old.subarray((r * kvHeads + h) * slots * headDim, (r * kvHeads + h + 1) * slots * headDim), at);
          grown.set(added.subarray(b * block + (r * kvHeads + h) * s * headDim, b * block + (r * kvHeads + h + 1) * s * headDim), at + slots * headDim);
        }
      }
      return grown;
    });
    slots += s;
    next.forEach((token, r) => outputs[r].push(token));
    for (const row of mask) row.push(1);
    fed = next.map((token) => [token]);
    fedPositions = positions.map((p, r) => [p + outputs[r].length - 1]);
  }
  return outputs;
}

ortWeb.env.wasm.numThreads = 1;

describe.each([
  ['onnxruntime-node', ortNode],
  ['onnxruntime-web (WASM)', ortWeb],
] as const)('the GroupQueryAttention in-place KV graph on %s', (_, runtime) => {
  it('decodes greedily as llama2.c does, alone and as a left-padded row beside a shorter prompt', async () => {
    const Tensor = runtime.Tensor as unknown as typeof ort.Tensor;
    const golden = JSON.parse(await readFile(sharedModelFile('golden-greedy.json'), 'utf8')) as Golden;
    const ckpt = await loadSharedCheckpoint();
    const graph = buildGqaInplaceLlamaGraph(ckpt, 1e-5);
    const bytes = encodeOnnxModel({ irVersion: ONNX_IR_VERSION, opsetVersion: ONNX_OPSET, producerName: 'test', producerVersion: '0', graph, extraOpsets: { 'com.microsoft': 1 } });
    const session = (await runtime.InferenceSession.create(bytes)) as unknown as ort.InferenceSession;
    try {
      expect(session.outputNames).toEqual(['logits', 'new_key_values']);
      const shape = { layers: ckpt.header.nLayers, kvHeads: ckpt.header.nKvHeads, headDim: ckpt.headDim };
      const steps = 40;
      const [alone] = await greedyRows(Tensor, session, [golden.prompt_ids], steps, shape);
      expect(alone).toEqual(golden.completion_ids.slice(0, steps));
      const shorter = golden.prompt_ids.slice(0, 3);
      const [shorterAlone] = await greedyRows(Tensor, session, [shorter], steps, shape);
      const together = await greedyRows(Tensor, session, [golden.prompt_ids, shorter], steps, shape);
      expect(together[0]).toEqual(golden.completion_ids.slice(0, steps));
      expect(together[1]).toEqual(shorterAlone);
    } finally {
      await session.release();
    }
  });
});
