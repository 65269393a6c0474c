/**
 * The step loop's yield: every step under Node; in homes where a yield is a posted task
 * (browsers, workerd: no setImmediate), once per STEP_SLICE_MS.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { STEP_SLICE_MS, watchLoopTurn, yieldBetweenSteps } from '../../src/threads/yield.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import { embeddedEngine, golden } from '../helpers/model.js';
import { countLoopTurns } from '../helpers/loop-turns.js';

/** Whether a task posted now (a MessageChannel message, as a page's click or socket would be) ran during `work`. */
async function taskRanDuring(work: () => Promise<void>): Promise<boolean> {
  let ran = false;
  const channel = new MessageChannel();
  channel.port1.onmessage = () => {
    ran = true;
    channel.port1.close();
  };
  channel.port2.postMessage(null);
  await work();
  const result = ran;
  channel.port1.close();
  return result;
}

describe('yieldBetweenSteps', () => {
  const setImmediateOfNode = globalThis.setImmediate;
  afterEach(() => {
    globalThis.setImmediate = setImmediateOfNode;
  });

  it('lets the event loop run at every step under Node', async () => {
    for (let step = 0; step < 5; step++) {
      let ran = false;
      setImmediate(() => (ran = true));
      await yieldBetweenSteps();
      expect(ran).toBe(true);
    }
  });

  it('without setImmediate, yields once per slice and lets only microtasks run within it', async () => {
    // A home without setImmediate (a page, workerd).
    (globalThis as { setImmediate?: unknown }).setImmediate = undefined;
    // The first call after a long pause yields: a pending task runs.
    await new Promise((resolve) => setTimeout(resolve, STEP_SLICE_MS + 5));
    expect(await taskRanDuring(() => yieldBetweenSteps())).toBe(true);
    // Right after it, a step inside the slice does not wait for tasks (tried after several
    // slices: a loaded machine may pause this process past one).
    let stepsWithoutTask = 0;
    for (let attempt = 0; attempt < 20 && stepsWithoutTask === 0; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, STEP_SLICE_MS + 1));
      await yieldBetweenSteps();
      if (!(await taskRanDuring(() => yieldBetweenSteps()))) stepsWithoutTask += 1;
    }
    expect(stepsWithoutTask).toBe(1);
    // Once the slice is used up, the next step yields again.
    const busyUntil = performance.now() + STEP_SLICE_MS + 1;
    while (performance.now() < busyUntil);
    expect(await taskRanDuring(() => yieldBetweenSteps())).toBe(true);
  });
});

describe('watchLoopTurn', () => {
  const setImmediateOfNode = globalThis.setImmediate;
  afterEach(() => {
    globalThis.setImmediate = setImmediateOfNode;
  });

  it('reports a turn once a call that starts from setImmediate (as onnxruntime-node runs a model) has resolved', async () => {
    const watch = watchLoopTurn();
    expect(watch.turned).toBe(false);
    // What onnxruntime-node's session.run does: the native call runs from an immediate,
    // queued after the watch's, in the same check phase (after the turn's poll phase).
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(watch.turned).toBe(true);
  });

  it('reports no turn after work that only ran microtasks', async () => {
    const watch = watchLoopTurn();
    for (let i = 0; i < 100; i++) await Promise.resolve();
    expect(watch.turned).toBe(false);
    await new Promise<void>((resolve) => setImmediate(resolve));
  });

  it('never reports a turn without setImmediate (a page), so the step loop yields as before', async () => {
    (globalThis as { setImmediate?: unknown }).setImmediate = undefined;
    const watch = watchLoopTurn();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(watch.turned).toBe(false);
  });
});

describe('the step loop on the main thread', () => {
  it('lets the event loop turn at every step, once, and gives the golden greedy text', async () => {
    const engine = await embeddedEngine();
    try {
      const loop = countLoopTurns();
      const params = defaultSamplingParams({ temperature: 0, maxTokens: golden.completion_ids.length });
      const ids: number[] = [];
      let deltas = 0;
      let beatsAtLastDelta = 0;
      const beatsBetweenDeltas: number[] = [];
      for await (const delta of engine.generate({ promptTokenIds: golden.prompt_ids, params })) {
        ids.push(...delta.tokenIds);
        if (deltas > 0) beatsBetweenDeltas.push(loop.turns - beatsAtLastDelta);
        beatsAtLastDelta = loop.turns;
        deltas += 1;
      }
      loop.stop();
      expect(ids).toEqual(golden.completion_ids);
      // Sockets, timers and new requests are served between any two tokens...
      expect(Math.min(...beatsBetweenDeltas)).toBeGreaterThanOrEqual(1);
      // ...and a step's model call is that turn: no second turn of the step loop's own a token.
      expect(beatsBetweenDeltas.filter((turns) => turns === 1).length).toBeGreaterThan(beatsBetweenDeltas.length / 2);
    } finally {
      await engine.dispose();
    }
  });
});
