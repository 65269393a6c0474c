/**
 * GGUF weights kept quantized (src/gguf/quantized-weights.ts): the graph that executes the
 * file's integers through MatMulNBits / GatherBlockQuantized (with the block-sum min
 * correction for Q4_1/Q5_1/K-quants) gives the logits of the graph built from ggml's exact
 * float32 dequantization, within float32 rounding, at every prompt position and on a decode
 * step over the cache; and no projection of a quantized type is left float32. (Greedy
 * agreement with llama-server is test/gguf/llama-server-parity.test.ts, which serves the
 * quantized graph.)
 */
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { buildGgufGraph, encodeGgufGraph, sourcesOf, type GgufModel } from '../../src/gguf/gguf-model.js';
import { ggufGraphOptionsFromEnv, openGgufModelAt } from '../../src/gguf/node-gguf.js';
import { LOGITS_TO_KEEP_INPUT } from '../../src/convert/logits-to-keep.js';
import { REPO_ROOT } from '../helpers/model.js';
import { readFile } from 'node:fs/promises';
import { readGguf, type ByteSource } from '../../src/gguf/gguf-file.js';

const FIXTURES = ['tiny-llama-kquants', 'tiny-llama-legacy-quantized', 'tiny-llama-legacy'];
const FLOAT_TYPES = new Set(['F32', 'F16', 'BF16']);
const PROMPT = [1, 403, 407, 261, 378, 432, 383, 300];

async function modelOf(name: string): Promise<GgufModel> {
  const path = join(REPO_ROOT, `test/fixtures/gguf/${name}.gguf`);
  const model = await openGgufModelAt(path);
  const bytes = new Uint8Array(await readFile(path));
  const source: ByteSource = { size: bytes.byteLength, read: async (offset, length) => bytes.subarray(offset, offset + length) };
  return { ...model, file: await readGguf(source) };
}

async function session(model: GgufModel, weights: 'quantized' | 'float32') {
  const { graph, execution, weights: forms } = await buildGgufGraph(model, 'fused', { weights, accuracyLevel: 0 });
  const nodes = graph.nodes.map((node) => node.opType);
  return { session: await ort.InferenceSession.create(encodeGgufGraph(graph, 'fused', model)), nodes, execution, forms };
}

type Session = ort.InferenceSession;

async function run(s: Session, model: GgufModel, ids: number[], past?: Map<string, ort.Tensor>) {
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
  const out = await s.run(feeds);
  return { logits: out.logits.data as Float32Array, present: new Map(Object.entries(out).filter(([name]) => name.startsWith('present.'))) };
}

function maxRelativeDiff(a: Float32Array, b: Float32Array): number {
  let scale = 0;
  let diff = 0;
  for (let i = 0; i < a.length; i++) {
    scale = Math.max(scale, Math.abs(b[i]));
    diff = Math.max(diff, Math.abs(a[i] - b[i]));
  }
  return diff / scale;
}

describe('GGUF weights kept quantized', () => {
  for (const fixture of FIXTURES) {
    it(`${fixture}: the quantized graph's logits equal the float32-dequantized graph's within float rounding`, async () => {
      const model = await modelOf(fixture);
      const quantized = await session(model, 'quantized');
      const float = await session(model, 'float32');
      expect(float.nodes).not.toContain('MatMulNBits');
      // Every projection and the embedding: quantized exactly when all the file rows it is built from are.
      const typeOf = new Map(model.file.tensors.map((t) => [t.name, t.type!.name]));
      expect(quantized.forms.size).toBe(4 * model.shape.nLayers + (model.shape.tiedEmbeddings ? 1 : 2));
      for (const [weight, form] of quantized.forms) {
        const allQuantized = sourcesOf(weight).every((source) => !FLOAT_TYPES.has(typeOf.get(source)!));
        expect(form.startsWith('float32'), `${weight}: ${form}`).toBe(!allQuantized);
      }
      const nbits = quantized.nodes.filter((op) => op === 'MatMulNBits').length;
      // A tied head reads the embedding's codes: one MatMulNBits more than the untied weights.
      const kept = [...quantized.forms].filter(([weight, form]) => !form.startsWith('float32') && (weight !== 'model.embed_tokens.weight' || model.shape.tiedEmbeddings));
      expect(nbits).toBe(kept.length);
      const ids = PROMPT.map((id) => id % model.shape.vocabSize);
      const q = await run(quantized.session, model, ids);
      const f = await run(float.session, model, ids);
      const prefill = maxRelativeDiff(q.logits, f.logits);
      const qStep = await run(quantized.session, model, [ids[2]], q.present);
      const fStep = await run(float.session, model, [ids[2]], f.present);
      const step = maxRelativeDiff(qStep.logits, fStep.logits);
      expect(prefill).toBeLessThan(1e-5);
      expect(step).toBeLessThan(1e-5);
    }, 60_000);
  }

  it('reads GGUF_WEIGHTS and GGUF_ACCURACY_LEVEL, refusing other values by name', () => {
    expect(ggufGraphOptionsFromEnv({})).toEqual({ weights: 'quantized', accuracyLevel: 0 });
    expect(ggufGraphOptionsFromEnv({ GGUF_WEIGHTS: 'float32', GGUF_ACCURACY_LEVEL: '4' })).toEqual({ weights: 'float32', accuracyLevel: 4 });
    expect(() => ggufGraphOptionsFromEnv({ GGUF_WEIGHTS: 'int4' })).toThrow(/GGUF_WEIGHTS must be one of quantized, float32, got "int4"/);
    expect(() => ggufGraphOptionsFromEnv({ GGUF_ACCURACY_LEVEL: '2' })).toThrow(/GGUF_ACCURACY_LEVEL must be 0, 1 or 4, got "2"/);
  });
});
