/**
 * Runs a GGUF file's decoder graph (the inplace flavour Node and the page run, or the fused
 * Hugging Face one) one sequence at a time over a cache kept as the engine keeps it, for the
 * tests that hold it against transformers' logits (gemma2.test.ts, gemma3.test.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect } from 'vitest';
import type { GraphOps } from '../../src/graph/llama-onnx-graph.js';
import { LOGITS_TO_KEEP_INPUT } from '../../src/graph/logits-to-keep.js';
import type { ByteSource } from '../../src/gguf/gguf-file.js';
import { buildGgufGraph, encodeGgufGraph, openGgufModel, type GgufModel, type GgufWeights } from '../../src/gguf/gguf-model.js';

export const FIXTURES = new URL('../fixtures/gguf/', import.meta.url).pathname;

/** One greedy generation of a reference JSON (make_gemma2_fixtures.py, make_gemma3_fixtures.py). */
export interface Generation {
  prompt: string;
  prompt_ids: number[];
  greedy_ids: number[];
  /** transformers' best logit minus its second best, at each greedy step. */
  margins: number[];
  /** [position][vocab]: transformers' logits at positions 0 .. prompt + greedy - 2. */
  logits: number[][];
}

export function bytesSource(bytes: Uint8Array): ByteSource {
  return { size: bytes.byteLength, read: async (offset, length) => bytes.subarray(offset, offset + length) };
}

export async function modelOf(file: string): Promise<GgufModel> {
  return openGgufModel(bytesSource(new Uint8Array(await readFile(join(FIXTURES, file)))));
}

export interface Run {
  step(ids: number[]): Promise<Float32Array>;
}

/** A session of flavour `ops` and a batch-of-one cache it keeps as the engine would (present, or in place). */
export async function runner(model: GgufModel, ops: GraphOps, weights: GgufWeights): Promise<Run & { nodes: string[]; execution: string[] }> {
  const { graph, execution } = await buildGgufGraph(model, ops, { weights, accuracyLevel: 0 });
  const session = await ort.InferenceSession.create(encodeGgufGraph(graph, ops, model));
  const { nLayers, nKvHeads, headDim, vocabSize } = model.shape;
  let cache: Array<{ key: Float32Array; value: Float32Array }> = Array.from({ length: nLayers }, () => ({ key: new Float32Array(0), value: new Float32Array(0) }));
  let cached = 0;
  const slots = (data: Float32Array, length: number) => new ort.Tensor('float32', data, [1, nKvHeads, length, headDim]);
  /** [1, kv, a, d] then [1, kv, b, d] → [1, kv, a + b, d]. */
  const append = (old: Float32Array, fresh: Float32Array, a: number, b: number) => {
    const out = new Float32Array(nKvHeads * (a + b) * headDim);
    for (let h = 0; h < nKvHeads; h++) {
      out.set(old.subarray(h * a * headDim, (h + 1) * a * headDim), h * (a + b) * headDim);
      out.set(fresh.subarray(h * b * headDim, (h + 1) * b * headDim), (h * (a + b) + a) * headDim);
    }
    return out;
  };
  return {
    nodes: graph.nodes.map((node) => node.opType),
    execution,
    async step(ids) {
      const total = cached + ids.length;
      const feeds: Record<string, ort.Tensor> = {
        input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]),
        attention_mask: new ort.Tensor('int64', new BigInt64Array(total).fill(1n), [1, total]),
        position_ids: new ort.Tensor('int64', BigInt64Array.from(ids, (_, i) => BigInt(cached + i)), [1, ids.length]),
        [LOGITS_TO_KEEP_INPUT]: new ort.Tensor('int64', BigInt64Array.of(BigInt(ids.length)), []),
      };
      cache.forEach((layer, i) => {
        feeds[`past_key_values.${i}.key`] = slots(layer.key, cached);
        feeds[`past_key_values.${i}.value`] = slots(layer.value, cached);
      });
      const out = await session.run(feeds);
      // In place: every layer's new slots in one output, block 2i its keys, 2i + 1 its values.
      const block = (index: number) => {
        const size = nKvHeads * ids.length * headDim;
        return (out.new_key_values.data as Float32Array).subarray(index * size, (index + 1) * size);
      };
      cache = cache.map((layer, i) =>
        ops === 'inplace'
          ? {
              key: append(layer.key, block(2 * i), cached, ids.length),
              value: append(layer.value, block(2 * i + 1), cached, ids.length),
            }
          : { key: out[`present.${i}.key`].data as Float32Array, value: out[`present.${i}.value`].data as Float32Array },
      );
      cached = total;
      const logits = out.logits.data as Float32Array;
      expect(logits.length).toBe(ids.length * vocabSize);
      return logits;
    },
  };
}

export const argmax = (row: ArrayLike<number>) => {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
};

/** max |ours - theirs| over the largest |theirs|, row by row. */
export function relativeDiff(ours: Float32Array, theirs: number[][], vocab: number): number {
  let scale = 0;
  let diff = 0;
  theirs.forEach((row, r) => {
    row.forEach((value, v) => {
      scale = Math.max(scale, Math.abs(value));
      diff = Math.max(diff, Math.abs(ours[r * vocab + v] - value));
    });
  });
  return diff / scale;
}


/** Prefills the prompt, then decodes the reference's greedy ids one at a time: every row within `tolerance` of transformers', the greedy ids equal. */
export async function expectGeneration(model: GgufModel, ops: GraphOps, generation: Generation, tolerance: number): Promise<void> {
  const vocab = model.shape.vocabSize;
  const run = await runner(model, ops, 'quantized');
  let logits = await run.step(generation.prompt_ids);
  expect(relativeDiff(logits, generation.logits.slice(0, generation.prompt_ids.length), vocab)).toBeLessThan(tolerance);
  const greedy: number[] = [];
  for (let step = 0; step < generation.greedy_ids.length; step++) {
    const last = logits.subarray(logits.length - vocab);
    greedy.push(argmax(last));
    expect(relativeDiff(last, [generation.logits[generation.prompt_ids.length - 1 + step]], vocab)).toBeLessThan(tolerance);
    if (step + 1 < generation.greedy_ids.length) logits = await run.step([greedy.at(-1)!]);
  }
  expect(greedy).toEqual(generation.greedy_ids);
}

/**
 * A reference that can tell a wrong graph apart: each named change of the model moves
 * transformers' logits by far more than the tolerance, every generation runs past twice the
 * sliding window, its greedy margins stand well above the tolerance, and it is not one token
 * repeated (the attention and the MLP decide the text).
 */
export function expectWellConditioned(generations: Generation[], changes: number[], window: number, tolerance: number): void {
  for (const change of changes) expect(change).toBeGreaterThan(0.05);
  for (const generation of generations) {
    expect(generation.prompt_ids.length + generation.greedy_ids.length).toBeGreaterThan(2 * window);
    const largest = Math.max(...generation.logits.flat().map(Math.abs));
    expect(Math.min(...generation.margins)).toBeGreaterThan(10 * tolerance * largest);
    expect(new Set(generation.greedy_ids).size).toBeGreaterThan(1);
  }
}

/**
 * A quantized file's matrices kept quantized (MatMulNBits for the four projections a layer
 * and the tied head, GatherBlockQuantized for the embedding) give the logits of its
 * float32-dequantized graph, for the prompt and for one decode step. Returns the quantized
 * run's execution lines, for the caller's checks of what it reports.
 */
export async function expectQuantizedLikeFloat(model: GgufModel, prompt: number[]): Promise<string[]> {
  const quantized = await runner(model, 'inplace', 'quantized');
  const float = await runner(model, 'inplace', 'float32');
  expect(float.nodes).not.toContain('MatMulNBits');
  expect(quantized.nodes.filter((op) => op === 'MatMulNBits')).toHaveLength(4 * model.shape.nLayers + 1);
  expect(quantized.nodes).toContain('GatherBlockQuantized');
  const vocab = model.shape.vocabSize;
  const asRows = (logits: Float32Array) => Array.from({ length: logits.length / vocab }, (_, r) => [...logits.subarray(r * vocab, (r + 1) * vocab)]);
  expect(relativeDiff(await quantized.step(prompt), asRows(await float.step(prompt)), vocab)).toBeLessThan(1e-5);
  expect(relativeDiff(await quantized.step([prompt[3]!]), asRows(await float.step([prompt[3]!])), vocab)).toBeLessThan(1e-5);
  return quantized.execution;
}

