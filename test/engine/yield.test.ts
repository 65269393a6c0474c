/**
 * The step loop's yield: every step under Node; in homes where a yield is a posted task
 * (browsers, workerd: no setImmediate), once per STEP_SLICE_MS.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { STEP_SLICE_MS, yieldBetweenSteps } from '../../src/threads/yield.js';

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
