import { afterAll, describe, expect, it } from 'vitest';
import { EngineOverloadedError } from '../../src/engine/errors.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import type { GenerationDelta } from '../../src/engine/types.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import { createNodeEngine } from '../../src/runtime/node-engine.js';
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
