import { afterAll, describe, expect, it } from 'vitest';
import { EngineOverloadedError } from '../../src/engine/errors.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import type { GenerationDelta } from '../../src/engine/types.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { MODEL_DIR, golden } from '../helpers/model.js';

const engines: LocalEngine[] = [];
afterAll(async () => {
  for (const engine of engines) await engine.dispose();
});

async function engineWith(limits: Parameters<typeof createNodeEngine>[0]['limits']) {
  const engine = await createNodeEngine({ modelDir: MODEL_DIR, limits });
  engines.push(engine);
  return engine;
}

async function drain(stream: AsyncIterable<GenerationDelta>) {
  const ids: number[] = [];
  for await (const delta of stream) ids.push(...delta.tokenIds);
  return ids;
}

const long = (maxTokens: number) => defaultSamplingParams({ temperature: 0, maxTokens, ignoreEos: true });

describe('admission control', () => {
  it('refuses requests past the waiting limit at once, and completes every admitted one', async () => {
    const engine = await engineWith({ maxRunningSequences: 1, maxWaitingRequests: 2 });
    const running = engine.generate({ promptTokenIds: golden.prompt_ids, params: long(200) })[Symbol.asyncIterator]();
    const first = await running.next();
    expect(first.value.tokenIds).toEqual([golden.completion_ids[0]]);
    // The one running slot is taken: these two wait, and fill the queue.
    const queued = [1, 2].map(() => drain(engine.generate({ promptTokenIds: golden.prompt_ids, params: long(30) })));
    expect(() => engine.generate({ promptTokenIds: golden.prompt_ids, params: long(30) })).toThrow(EngineOverloadedError);
    const rest = drain({ [Symbol.asyncIterator]: () => running });
    expect((await rest).length).toBe(199);
    for (const out of await Promise.all(queued)) expect(out).toEqual(golden.completion_ids.slice(0, 30));
    // Once the queue has room again, requests are taken.
    expect(await drain(engine.generate({ promptTokenIds: golden.prompt_ids, params: long(3) }))).toEqual(golden.completion_ids.slice(0, 3));
  });

  it('never runs more sequences at once than the running limit', async () => {
    const engine = await engineWith({ maxRunningSequences: 2 });
    let peak = 0;
    const watch = setInterval(() => (peak = Math.max(peak, engine.stats().running - (engine as unknown as { scheduler: { waiting: unknown[] } }).scheduler.waiting.length)), 1);
    const outputs = await Promise.all(
      Array.from({ length: 5 }, () => drain(engine.generate({ promptTokenIds: golden.prompt_ids, params: long(40) }))),
    );
    clearInterval(watch);
    for (const out of outputs) expect(out).toEqual(golden.completion_ids.slice(0, 40));
    expect(peak).toBeLessThanOrEqual(2);
    expect(peak).toBeGreaterThan(0);
  });

  it('refuses a request that waited past the admission deadline', async () => {
    const engine = await engineWith({ maxRunningSequences: 1, waitingDeadlineMs: 30 });
    const first = drain(engine.generate({ promptTokenIds: golden.prompt_ids, params: long(300) }));
    const second = drain(engine.generate({ promptTokenIds: golden.prompt_ids, params: long(5) }));
    await expect(second).rejects.toBeInstanceOf(EngineOverloadedError);
    await expect(second).rejects.toThrow(/waited more than 30 ms/);
    expect((await first).length).toBe(300);
  });
});

/** Streams a request, noting (in `order`) when its first token came, and returns each sequence's ids. */
async function drainSequences(stream: AsyncIterable<GenerationDelta>, name: string, order: string[]): Promise<number[][]> {
  const sequences: number[][] = [];
  for await (const delta of stream) {
    if (!order.includes(name)) order.push(name);
    (sequences[delta.index] ??= []).push(...delta.tokenIds);
  }
  return sequences;
}

describe('the extra share: sequences beyond a request\'s first hold at most maxExtraSequenceSlotPercent of the batch', () => {
  // 8 rows, half of them for extra sequences: a request of 4 sequences holds 3 extra ones.
  const limits = { maxRunningSequences: 8, maxExtraSequenceSlotPercent: 50 };
  const wide = (maxTokens: number) => defaultSamplingParams({ temperature: 0, maxTokens, ignoreEos: true, n: 4 });

  it('a request with one sequence passes a wide one waiting for the share and starts within two steps; both wide ones finish, outputs unchanged', async () => {
    const engine = await engineWith(limits);
    const order: string[] = [];
    const first = engine.generate({ promptTokenIds: golden.prompt_ids, params: wide(100) })[Symbol.asyncIterator]();
    const head = await first.next();
    order.push('first');
    const firstRest = drainSequences({ [Symbol.asyncIterator]: () => first }, 'first', order);
    // 3 + 3 extra sequences would pass the share of 4: the second waits.
    const second = drainSequences(engine.generate({ promptTokenIds: golden.prompt_ids, params: wide(20) }), 'second', order);
    // A couple of steps with the second one waiting (counted, not timed: a loaded machine's timer
    // could let the first one end meanwhile).
    const stepsBefore = engine.stats().steps;
    while (engine.stats().steps < stepsBefore + 2) await new Promise((resolve) => setImmediate(resolve));
    const stepsAtArrival = engine.stats().steps;
    const normal = engine.generate({ promptTokenIds: golden.prompt_ids, params: long(5) })[Symbol.asyncIterator]();
    const normalFirst = await normal.next();
    const stepsToStart = engine.stats().steps - stepsAtArrival;
    expect(normalFirst.value.tokenIds).toEqual([golden.completion_ids[0]]);
    // Its prefill is one step; at most one decode step of the running batch comes before it.
    expect(stepsToStart).toBeLessThanOrEqual(2);
    expect(order).not.toContain('second');
    const normalIds = [normalFirst.value.tokenIds[0], ...(await drain({ [Symbol.asyncIterator]: () => normal }))];
    expect(normalIds).toEqual(golden.completion_ids.slice(0, 5));
    const firstSequences = await firstRest;
    firstSequences[head.value.index].unshift(...head.value.tokenIds);
    for (const ids of firstSequences) expect(ids).toEqual(golden.completion_ids.slice(0, 100));
    for (const ids of await second) expect(ids).toEqual(golden.completion_ids.slice(0, 20));
  });

  it('a wide request behind one waiting for the share does not pass it, so that one starts once the running wide one ends', async () => {
    const engine = await engineWith(limits);
    const order: string[] = [];
    const first = engine.generate({ promptTokenIds: golden.prompt_ids, params: wide(40) })[Symbol.asyncIterator]();
    await first.next();
    const firstRest = drain({ [Symbol.asyncIterator]: () => first });
    const second = drainSequences(engine.generate({ promptTokenIds: golden.prompt_ids, params: wide(10) }), 'second', order);
    // Its one extra sequence would fit the share (3 + 1 of 4), but the second request waits ahead of it.
    const third = drainSequences(engine.generate({ promptTokenIds: golden.prompt_ids, params: defaultSamplingParams({ temperature: 0, maxTokens: 10, ignoreEos: true, n: 2 }) }), 'third', order);
    await firstRest;
    const [secondIds, thirdIds] = await Promise.all([second, third]);
    expect(order).toEqual(['second', 'third']);
    for (const ids of [...secondIds, ...thirdIds]) expect(ids).toEqual(golden.completion_ids.slice(0, 10));
  });

  it('the prompts of one client request (one requestKey) count as one request: those beyond its first are extra', async () => {
    const engine = await engineWith(limits);
    const order: string[] = [];
    const requestKey = {};
    // Eight one-sequence prompts of one request: 1 + 4 extra fit, the other three wait.
    const prompts = Array.from({ length: 8 }, (_, i) => drainSequences(engine.generate({ promptTokenIds: golden.prompt_ids, params: long(100), requestKey }), `prompt ${i}`, order));
    // The normal request arrives once the five are running, long before any of them ends (a
    // fixed delay let them finish first on a loaded machine, and the other three go ahead).
    while (!order.includes('prompt 4')) await new Promise((resolve) => setImmediate(resolve));
    const normal = drainSequences(engine.generate({ promptTokenIds: golden.prompt_ids, params: long(3) }), 'normal', order);
    for (const ids of (await Promise.all([...prompts, normal])).flat()) expect(ids).toEqual(golden.completion_ids.slice(0, ids.length));
    // The normal request started before the prompts that waited for the share.
    expect(order.indexOf('normal')).toBeLessThan(order.indexOf('prompt 5'));
    expect(order.indexOf('normal')).toBeGreaterThan(order.indexOf('prompt 4'));
  });
});
