/** A GGUF fixture's graph on onnxruntime-node, and one forward pass over it (tests of the graph's logits). */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { buildGgufGraph, encodeGgufGraph, type GgufModel, type GgufWeights } from '../../src/gguf/gguf-model.js';
import { openGgufModelAt } from '../../src/gguf/node-gguf.js';
import { readGguf, type ByteSource } from '../../src/gguf/gguf-file.js';
import { LOGITS_TO_KEEP_INPUT } from '../../src/graph/logits-to-keep.js';
import { REPO_ROOT } from '../helpers/model.js';

/** test/fixtures/gguf/<name>.gguf, its bytes held in memory (the graph builder reads tensors from them). */
export async function fixtureModel(name: string): Promise<GgufModel> {
  const path = join(REPO_ROOT, `test/fixtures/gguf/${name}.gguf`);
  const model = await openGgufModelAt(path);
  const bytes = new Uint8Array(await readFile(path));
  const source: ByteSource = { size: bytes.byteLength, read: async (offset, length) => bytes.subarray(offset, offset + length) };
  return { ...model, file: await readGguf(source) };
}

/** The `fused` graph (the Hugging Face present.* contract) of the model with its weights as `weights`. */
export async function fusedSession(model: GgufModel, weights: GgufWeights) {
  const { graph, execution, weights: forms } = await buildGgufGraph(model, 'fused', { weights, accuracyLevel: 0 });
  const nodes = graph.nodes.map((node) => node.opType);
  return { session: await ort.InferenceSession.create(encodeGgufGraph(graph, 'fused', model)), nodes, execution, forms };
}

/** Logits [ids.length, vocab] of one row fed `ids` after `past` (present.* of an earlier run), and its present.*. */
export async function forward(session: ort.InferenceSession, model: GgufModel, ids: number[], past?: Map<string, ort.Tensor>) {
  const { nLayers, nKvHeads, headDim } = model.shape;
  const pastLength = past ? (past.get('present.0.key')!.dims[2] as number) : 0;
  const feeds: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(pastLength + ids.length).fill(1n), [1, pastLength + ids.length]),
    position_ids: new ort.Tensor('int64', BigInt64Array.from(ids, (_, i) => BigInt(pastLength + i)), [1, ids.length]),
    [LOGITS_TO_KEEP_INPUT]: new ort.Tensor('int64', BigInt64Array.of(BigInt(ids.length)), []),
  };
  for (let i = 0; i < nLayers; i++) {
    for (const kind of ['key', 'value']) {
      feeds[`past_key_values.${i}.${kind}`] = past?.get(`present.${i}.${kind}`) ?? new ort.Tensor('float32', new Float32Array(0), [1, nKvHeads, 0, headDim]);
    }
  }
  const out = await session.run(feeds);
  return { logits: out.logits.data as Float32Array, present: new Map(Object.entries(out).filter(([name]) => name.startsWith('present.'))) };
}

/** max |a - b| over max |b|. */
export function maxRelativeDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let scale = 0;
  let diff = 0;
  for (let i = 0; i < a.length; i++) {
    scale = Math.max(scale, Math.abs(b[i]));
    diff = Math.max(diff, Math.abs(a[i] - b[i]));
  }
  return diff / scale;
}
