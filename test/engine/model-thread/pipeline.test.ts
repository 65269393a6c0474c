/**
 * Worker mode's overlapped lanes (model-thread/lanes.ts): the running rows split into two
 * batches whose steps alternate in the worker, each step sent before the last one's
 * tokens are streamed. Output is the main thread's: greedy alone, batched, joining
 * midway; seeded sampling per request; a client that disconnects stops its row.
 */
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LocalEngine } from '../../../src/engine/local-engine.js';
import { laneTakesRequest, ownLaneForLongRow } from '../../../src/engine/model-thread/lanes.js';
import type { WorkerDecoder } from '../../../src/engine/model-thread/worker-decoder.js';
import { createNodeEngine } from '../../../src/runtime/node/engine.js';
import { defaultSamplingParams } from '../../../src/sampling/params.js';
import { collectGeneration, collectJoiningMidway, generateUntilAborted, golden, MODEL_DIR } from '../../helpers/model.js';
import { MODEL, testApp } from '../../http/helpers.js';

let main: LocalEngine;
let lanes: LocalEngine;

beforeAll(async () => {
  [main, lanes] = await Promise.all([
    createNodeEngine({ modelDir: MODEL_DIR, modelThread: 'main' }),
    // Every request may take the second lane, however few rows run.
    createNodeEngine({ modelDir: MODEL_DIR, modelThread: 'worker', pipeline: { lanes: 2, minRows: 0 } }),
  ]);
});

afterAll(async () => {
  await Promise.all([main?.dispose(), lanes?.dispose()]);
});

const greedy = { temperature: 0, maxTokens: 40, ignoreEos: true };
const prompts = [golden.prompt_ids, golden.prompt_ids.slice(0, 3), [1, 403, 407, 261, 378, 432, 383], [1, 300], [1, 261, 378], [1, 500, 12, 7, 99]];

/** The worker's KV caches not released, less the prefix cache's kept prompts (one each, held on purpose). */
function liveCaches(engine: LocalEngine): number {
  return (engine as unknown as { decoder: WorkerDecoder }).decoder.kv.liveCaches - (engine.stats().prefixCache?.keptSequences ?? 0);
}

describe('lane choice', () => {
  it('keeps requests on the first lane below minRows, then on the least loaded lane', () => {
    expect(laneTakesRequest(0, [5], 16)).toBe(true);
    expect(laneTakesRequest(0, [10, 0], 16)).toBe(true);
    expect(laneTakesRequest(1, [10, 0], 16)).toBe(false);
    expect(laneTakesRequest(1, [16, 0], 16)).toBe(true);
    expect(laneTakesRequest(0, [16, 0], 16)).toBe(false);
    expect(laneTakesRequest(0, [8, 8], 0)).toBe(true);
    expect(laneTakesRequest(1, [8, 8], 0)).toBe(true);
    // Whatever the loads, some lane takes the request.
    for (const loads of [[0, 0], [3, 1], [1, 3], [20, 20], [17, 2]]) {
      for (const minRows of [0, 4, 16, 64]) expect(loads.some((_, lane) => laneTakesRequest(lane, loads, minRows))).toBe(true);
    }
  });
});

describe('a long prompt’s lane', () => {
  const busy = (longestRow: number) => ({ rows: 8, longestRow, idle: false });
  const idle = { rows: 0, longestRow: 0, idle: true };
  it('sends a prompt much longer than every running row to an idle lane', () => {
    expect(ownLaneForLongRow(800, [busy(20), idle])).toBe(1);
    expect(ownLaneForLongRow(800, [idle, busy(20)])).toBe(0);
  });
  it('leaves the ordinary choice when nothing runs, no lane is idle, the prompt is short or not much longer', () => {
    expect(ownLaneForLongRow(800, [idle, idle])).toBe(-1);
    expect(ownLaneForLongRow(800, [busy(20), busy(20)])).toBe(-1);
    expect(ownLaneForLongRow(100, [busy(10), idle])).toBe(-1);
    expect(ownLaneForLongRow(800, [busy(300), idle])).toBe(-1);
    expect(ownLaneForLongRow(800, [busy(20)])).toBe(-1);
  });
});

describe('worker mode with two lanes', () => {
  it('gives main mode’s greedy tokens alone, all at once (in two batches) and joining midway', async () => {
    const solo: number[][] = [];
    for (const prompt of prompts) solo.push((await collectGeneration(main, prompt, greedy)).tokenIds);
    expect((await collectGeneration(lanes, prompts[0], greedy)).tokenIds).toEqual(solo[0]);
    const steps = lanes.stats().steps;
    const together = await Promise.all(prompts.map((prompt) => collectGeneration(lanes, prompt, greedy)));
    together.forEach((result, index) => expect(result.tokenIds, `prompt ${index} batched`).toEqual(solo[index]));
    // Two batches: each takes its own ~40 steps (one batch would take ~40 plus the prefills).
    expect(lanes.stats().steps - steps).toBeGreaterThan(40 + prompts.length + 10);
    const joining = await collectJoiningMidway(lanes, prompts, greedy);
    joining.forEach((result, index) => expect(result.tokenIds, `prompt ${index} joining`).toEqual(solo[index]));
    await vi.waitFor(() => expect(liveCaches(lanes)).toBe(0));
  });

  it('keeps each request’s seeded sampling whichever lane it runs in', async () => {
    const sampled = (seed: bigint) => ({ temperature: 0.9, topP: 0.9, seed, n: 2, maxTokens: 24, ignoreEos: true });
    const run = async (engine: LocalEngine, prompt: number[], seed: bigint) => {
      const bySequence = new Map<number, number[]>();
      for await (const delta of engine.generate({ promptTokenIds: prompt, params: defaultSamplingParams(sampled(seed)) })) {
        bySequence.set(delta.index, [...(bySequence.get(delta.index) ?? []), ...delta.tokenIds]);
      }
      return [...bySequence.entries()].sort(([a], [b]) => a - b);
    };
    const alone: Array<Array<[number, number[]]>> = [];
    for (const [index, prompt] of prompts.entries()) alone.push(await run(main, prompt, BigInt(index + 1)));
    const together = await Promise.all(prompts.map((prompt, index) => run(lanes, prompt, BigInt(index + 1))));
    together.forEach((sequences, index) => expect(sequences, `request ${index}`).toEqual(alone[index]));
  });

  it('stops an aborted request’s row while the other lane’s and its own lane’s rows go on', async () => {
    const solo = (await collectGeneration(main, prompts[2], { ...greedy, maxTokens: 120 })).tokenIds;
    const aborted = generateUntilAborted(lanes, golden.prompt_ids);
    const others = Promise.all([0, 1, 2].map(() => collectGeneration(lanes, prompts[2], { ...greedy, maxTokens: 120 })));
    const stopped = await aborted;
    expect(stopped.finishReason).toBe('abort');
    expect(stopped.tokens.length).toBeLessThan(400);
    for (const result of await others) expect(result.tokenIds).toEqual(solo);
    expect(lanes.stats().running).toBe(0);
    await vi.waitFor(() => expect(liveCaches(lanes)).toBe(0));
  });
});

describe('worker mode with two lanes over HTTP', () => {
  let server: ServerType;
  let url: string;
  beforeAll(async () => {
    await new Promise<void>((resolve) => {
      server = serve({ fetch: testApp(lanes).fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => {
        url = `http://127.0.0.1:${info.port}`;
        resolve();
      });
    });
  });
  afterAll(async () => {
    await new Promise((resolve) => {
      server.close(resolve);
      if ('closeAllConnections' in server) server.closeAllConnections();
    });
  });

  const post = (body: Record<string, unknown>, signal?: AbortSignal) =>
    fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, ...body }), signal });

  it('streams every request’s solo text, and a client that disconnects stops its generation', async () => {
    const expected = (await (await post({ prompt: golden.prompt_ids, temperature: 0, max_tokens: 60, ignore_eos: true })).json()).choices[0].text;
    const before = lanes.stats();
    const controller = new AbortController();
    const leaving = await post({ prompt: golden.prompt_ids, stream: true, ignore_eos: true, max_tokens: 500 }, controller.signal);
    expect(leaving.status).toBe(200);
    expect((await leaving.body!.getReader().read()).done).toBe(false);
    const staying = Promise.all(
      [0, 1, 2, 3].map(async () => {
        const response = await post({ prompt: golden.prompt_ids, temperature: 0, max_tokens: 60, ignore_eos: true, stream: true });
        const text = await response.text();
        return text
          .split('\n')
          .filter((line) => line.startsWith('data: {'))
          .map((line) => (JSON.parse(line.slice(6)) as { choices: Array<{ text: string }> }).choices[0].text)
          .join('');
      }),
    );
    controller.abort();
    for (const text of await staying) expect(text).toBe(expected);
    await vi.waitFor(() => expect(lanes.stats().running).toBe(0));
    // 4 × 60 tokens for the others; the one that left stopped far short of its 500.
    expect(lanes.stats().generatedTokens - before.generatedTokens).toBeLessThan(4 * 60 + 500);
  });
});
