/**
 * The in-place KV cache (src/engine/kv/in-place-kv.ts) and the converter's `inplace` graphs
 * served with it: rows keep their slots in one buffer with room to grow, a step writes only
 * the new slots, rows leaving and joining move only themselves, and the tokens are the
 * reference forward pass's, alone, batched, across growth, to the end of the context, on
 * onnxruntime-node and onnxruntime-web (WASM).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { compactInPlace, markInPlaceSlots, slotRoom, writeNewSlots } from '../../../src/engine/kv/in-place-kv.js';
import { emptyKvCache } from '../../../src/engine/kv/kv-cache.js';
import type { KvCache } from '../../../src/engine/kv/types.js';
import { EngineRequestError } from '../../../src/engine/errors.js';
import type { LocalEngine } from '../../../src/engine/local-engine.js';
import { createNodeEngine } from '../../../src/runtime/node/engine.js';
import { defaultSamplingParams } from '../../../src/sampling/params.js';
import { fixtureCheckpoint, referenceGreedy, removeFixtureFolders, writeFixtureFolder } from '../../helpers/byom-fixtures.js';
import { collectGeneration, collectJoiningMidway } from '../../helpers/model.js';

const HEADS = 2;
const HEAD_DIM = 3;
const LAYERS = 2;

/** A cache of `rows` allocated rows whose first `batch` hold, at slot s < lengths[row], values tracing (layer, row, head, slot, dim). */
function tracedCache(batch: number, rows: number, length: number, lengths: number[], tag = 0): KvCache {
  const make = (layer: number, kind: number) => {
    const data = new Float32Array(rows * HEADS * length * HEAD_DIM);
    for (let b = 0; b < batch; b++)
      for (let h = 0; h < HEADS; h++)
        for (let s = 0; s < lengths[b]; s++)
          for (let d = 0; d < HEAD_DIM; d++) data[((b * HEADS + h) * length + s) * HEAD_DIM + d] = trace(tag, kind, layer, b, h, s, d);
    return data;
  };
  return {
    batch,
    length,
    heads: HEADS,
    headDim: HEAD_DIM,
    keys: Array.from({ length: LAYERS }, (_, l) => make(l, 1)),
    values: Array.from({ length: LAYERS }, (_, l) => make(l, 2)),
  };
}

function trace(tag: number, kind: number, layer: number, row: number, head: number, slot: number, dim: number): number {
  return tag * 1e6 + kind * 1e5 + layer * 1e4 + row * 1e3 + head * 100 + slot * 10 + dim;
}

/** Row `row`'s first `count` slots of `cache` hold the traced slots of row `from` of the cache tagged `tag`. */
function expectRow(cache: KvCache, row: number, count: number, from: number, tag = 0): void {
  for (let layer = 0; layer < LAYERS; layer++)
    for (let h = 0; h < HEADS; h++)
      for (let s = 0; s < count; s++)
        for (let d = 0; d < HEAD_DIM; d++) {
          const at = ((row * HEADS + h) * cache.length + s) * HEAD_DIM + d;
          expect(cache.keys[layer][at]).toBe(trace(tag, 1, layer, from, h, s, d));
          expect(cache.values[layer][at]).toBe(trace(tag, 2, layer, from, h, s, d));
        }
}

describe('in-place KV store', () => {
  it('allocates slots with a quarter of room in blocks of 64, up to the context unless a row needs more', () => {
    expect(slotRoom(1, 512)).toBe(64);
    expect(slotRoom(64, 512)).toBe(128);
    expect(slotRoom(200, 512)).toBe(256);
    expect(slotRoom(500, 512)).toBe(512);
    expect(slotRoom(90, 96)).toBe(96);
    expect(slotRoom(600, 512)).toBe(600);
  });

  it('a row leaving and another joining: the rows after it move down and the new row takes the freed place, in the same buffers', () => {
    const current = tracedCache(3, 4, 64, [5, 7, 9]);
    const prefill = tracedCache(1, 1, 4, [4], 1);
    const keys = current.keys[0];
    const next = compactInPlace(
      [
        { cache: current, row: 0, realLength: 5 },
        { cache: current, row: 2, realLength: 9 },
        { cache: prefill, row: 0, realLength: 4 },
      ],
      current,
      10,
      512,
    );
    expect(next.batch).toBe(3);
    expect(next.length).toBe(64);
    expect(next.keys[0]).toBe(keys);
    expectRow(next, 0, 5, 0);
    expectRow(next, 1, 9, 2);
    expectRow(next, 2, 4, 0, 1);
  });

  it('moves to larger buffers when a row outgrows its slots or the batch its rows, keeping every row', () => {
    const current = tracedCache(2, 2, 64, [64, 30]);
    const grown = compactInPlace(
      [
        { cache: current, row: 0, realLength: 64 },
        { cache: current, row: 1, realLength: 30 },
      ],
      current,
      65,
      512,
    );
    expect(grown.length).toBe(128);
    expect(grown.keys[0]).not.toBe(current.keys[0]);
    expectRow(grown, 0, 64, 0);
    expectRow(grown, 1, 30, 1);
    const joined = compactInPlace(
      [
        { cache: current, row: 0, realLength: 10 },
        { cache: current, row: 1, realLength: 10 },
        { cache: tracedCache(1, 1, 4, [4], 1), row: 0, realLength: 4 },
      ],
      current,
      11,
      512,
    );
    expect(joined.keys[0].length).toBe(4 * HEADS * 64 * HEAD_DIM);
    expectRow(joined, 2, 4, 0, 1);
  });

  it('keeps a lone row in its own one-row cache when it has the room (a prompt prefilled in place, adopted by an idle batch), and copies one without room', () => {
    const sliced = tracedCache(1, 1, 256, [200], 1);
    const adopted = compactInPlace([{ cache: sliced, row: 0, realLength: 200 }], sliced, 201, 512);
    expect(adopted.keys[0]).toBe(sliced.keys[0]);
    expect(adopted.batch).toBe(1);
    expectRow(adopted, 0, 200, 0, 1);
    // Exactly the prompt's slots (a whole prefill's cache): no room for the next token, so new buffers.
    const whole = tracedCache(1, 1, 200, [200], 1);
    const copied = compactInPlace([{ cache: whole, row: 0, realLength: 200 }], whole, 201, 512);
    expect(copied.keys[0]).not.toBe(whole.keys[0]);
    expectRow(copied, 0, 200, 0, 1);
  });

  it('copies into new buffers when a row would be overwritten before it is read (a fork of an earlier row)', () => {
    const current = tracedCache(2, 4, 64, [6, 8]);
    const next = compactInPlace(
      [
        { cache: current, row: 1, realLength: 8 },
        { cache: current, row: 0, realLength: 6 },
        { cache: current, row: 1, realLength: 8 },
      ],
      current,
      9,
      512,
    );
    expect(next.keys[0]).not.toBe(current.keys[0]);
    expectRow(next, 0, 8, 1);
    expectRow(next, 1, 6, 0);
    expectRow(next, 2, 8, 1);
  });

  it('shrinks when the rows left need less than half the slots (attention runs over every slot)', () => {
    const current = tracedCache(2, 2, 256, [200, 20]);
    const next = compactInPlace([{ cache: current, row: 1, realLength: 20 }], current, 21, 512);
    expect(next.length).toBe(64);
    expectRow(next, 0, 20, 1);
  });

  it("writes a step's new keys and values after each row's real slots, and refuses a row without room", () => {
    const cache = tracedCache(2, 2, 8, [3, 5]);
    const fed = (kind: number) => Array.from({ length: LAYERS }, (_, layer) => Float32Array.from({ length: 2 * HEADS * HEAD_DIM }, (_, i) => -(kind * 1000 + layer * 100 + i)));
    writeNewSlots(cache, fed(1), fed(2), [3, 5], 1);
    for (let layer = 0; layer < LAYERS; layer++)
      for (let row = 0; row < 2; row++)
        for (let h = 0; h < HEADS; h++)
          for (let d = 0; d < HEAD_DIM; d++) {
            const slot = row === 0 ? 3 : 5;
            expect(cache.keys[layer][((row * HEADS + h) * 8 + slot) * HEAD_DIM + d]).toBe(-(1000 + layer * 100 + (row * HEADS + h) * HEAD_DIM + d));
          }
    expectRow(cache, 1, 5, 1);
    expect(() => writeNewSlots(cache, fed(1), fed(2), [3, 8], 1)).toThrow('row 1 has 8 of 8 slots, no room for 1 more');
  });

  it('masks each row to its real cached slots and the fed tokens', () => {
    const mask = new BigInt64Array(2 * (4 + 2));
    markInPlaceSlots(mask, 0, 4, 1, 2);
    markInPlaceSlots(mask, 1, 4, 3, 2);
    expect(Array.from(mask, Number)).toEqual([1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1]);
  });

  it('an empty cache grows from nothing', () => {
    const empty = emptyKvCache(LAYERS, 0, HEADS, HEAD_DIM);
    const prefill = tracedCache(1, 1, 7, [7], 1);
    const next = compactInPlace([{ cache: prefill, row: 0, realLength: 7 }], empty, 8, 96);
    expect(next.length).toBe(64);
    expectRow(next, 0, 7, 0, 1);
  });
});

describe('the inplace graph served by the engine', () => {
  const CONTEXT = fixtureCheckpoint().header.seqLen;
  const PROMPTS = [
    [72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100],
    [84, 104],
    [65, 32, 115, 104, 111, 114, 116, 101, 114],
  ];
  let dir: string;
  let engine: LocalEngine;
  beforeAll(async () => {
    dir = await writeFixtureFolder({ graph: 'inplace' });
    engine = await createNodeEngine({ modelDir: dir, limits: { speculativeDecoding: 'off' } });
  });
  afterAll(async () => {
    await engine?.dispose();
    await removeFixtureFolders();
  });
  const toTheEnd = (prompt: number[]) => ({ temperature: 0, maxTokens: CONTEXT - prompt.length, ignoreEos: true });

  it('binds the in-place contract at load, batched (the self-test passed on it)', () => {
    expect(engine.loadReport.contract).toBe('ids int64, KV float32, logits float32, position_ids, in-place KV (new_key_values)');
    expect(engine.loadReport.batching).toEqual({ kind: 'batched', padding: 'start' });
  });

  it("decodes to the end of the context with the reference's tokens (the cache grows past its first 64 slots), then finishes with length", async () => {
    const prompt = PROMPTS[0];
    const out = await collectGeneration(engine, prompt, toTheEnd(prompt));
    expect(out.tokenIds).toEqual(referenceGreedy(prompt, CONTEXT - prompt.length).tokenIds);
    expect(out.finishReason).toBe('length');
  });

  it('refuses a prompt that fills the context, as for any graph', () => {
    expect(() => engine.generate({ promptTokenIds: Array.from({ length: CONTEXT }, () => 65), params: defaultSamplingParams({ maxTokens: 1 }) })).toThrow(
      EngineRequestError,
    );
  });

  it('rows joining midway, each decoding to the end of the context: every one gets its solo tokens', async () => {
    const together = await collectJoiningMidway(engine, PROMPTS, { temperature: 0, maxTokens: CONTEXT - 12, ignoreEos: true });
    together.forEach((out, i) => expect(out.tokenIds).toEqual(referenceGreedy(PROMPTS[i], CONTEXT - 12).tokenIds));
  });

  it('a row leaving mid-generation and another joining in its place: both rows around it keep their tokens', async () => {
    const run = (prompt: number[], maxTokens: number) => collectGeneration(engine, prompt, { temperature: 0, maxTokens, ignoreEos: true });
    const long = run(PROMPTS[0], 70);
    const short = await run(PROMPTS[1], 5);
    const middle = run(PROMPTS[2], 40);
    // Joins once the short one has left (its rows were compacted away), while the others decode.
    const late = await run(PROMPTS[1], 30);
    expect(short.tokenIds).toEqual(referenceGreedy(PROMPTS[1], 5).tokenIds);
    expect(late.tokenIds).toEqual(referenceGreedy(PROMPTS[1], 30).tokenIds);
    expect((await middle).tokenIds).toEqual(referenceGreedy(PROMPTS[2], 40).tokenIds);
    expect((await long).tokenIds).toEqual(referenceGreedy(PROMPTS[0], 70).tokenIds);
  });

  it('speculative steps (several fed tokens per row) write their accepted slots in place: the tokens stay the reference ones', async () => {
    const speculative = await createNodeEngine({ modelDir: dir, limits: { speculativeDecoding: 'all', numSpeculativeTokens: 3 } });
    const warn = vi.spyOn(console, 'warn');
    try {
      const prompt = [65, 66, 67, 65, 66, 67, 65, 66, 67, 65, 66];
      const stepsBefore = speculative.stats().steps;
      const [a, b] = await Promise.all([prompt, PROMPTS[2]].map((p) => collectGeneration(speculative, p, toTheEnd(p))));
      expect(a.tokenIds).toEqual(referenceGreedy(prompt, CONTEXT - prompt.length).tokenIds);
      expect(b.tokenIds).toEqual(referenceGreedy(PROMPTS[2], CONTEXT - PROMPTS[2].length).tokenIds);
      // Guesses were taken (fewer steps than the longer request's tokens), and never failed.
      expect(speculative.stats().steps - stepsBefore).toBeLessThan(CONTEXT - PROMPTS[2].length);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
      await speculative.dispose();
    }
  });

  it('beam search (rows forked from rows) gives the beams the fused graph gives', async () => {
    const fusedDir = await writeFixtureFolder({ graph: 'fused' });
    const fused = await createNodeEngine({ modelDir: fusedDir, limits: { speculativeDecoding: 'off' } });
    try {
      const params = { useBeamSearch: true, n: 3, bestOf: 3, temperature: 0, maxTokens: 70, ignoreEos: true };
      const beams = async (e: LocalEngine) => {
        const sequences = new Map<number, number[]>();
        for await (const delta of e.generate({ promptTokenIds: PROMPTS[2], params: defaultSamplingParams(params) })) {
          sequences.set(delta.index, [...(sequences.get(delta.index) ?? []), ...delta.tokenIds]);
        }
        return [...sequences.entries()].sort(([a], [b]) => a - b).map(([, ids]) => ids);
      };
      const expected = await beams(fused);
      expect(expected).toHaveLength(3);
      expect(await beams(engine)).toEqual(expected);
    } finally {
      await fused.dispose();
    }
  });

  it('onnxruntime-web (WASM) serves it too: greedy to the end of the context, batched, equals the reference', async () => {
    const wasm = await createNodeEngine({ modelDir: dir, backend: 'wasm', limits: { speculativeDecoding: 'off' } });
    try {
      expect(wasm.loadReport.batching).toEqual({ kind: 'batched', padding: 'start' });
      const outs = await Promise.all(PROMPTS.map((prompt) => collectGeneration(wasm, prompt, toTheEnd(prompt))));
      outs.forEach((out, i) => expect(out.tokenIds).toEqual(referenceGreedy(PROMPTS[i], CONTEXT - PROMPTS[i].length).tokenIds));
    } finally {
      await wasm.dispose();
    }
  });
});
