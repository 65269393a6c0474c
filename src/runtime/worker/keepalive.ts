/**
 * workerd ties timers and promise continuations to the request that created them and
 * drops them once that request is over. LocalEngine's step loop is started by the
 * request that finds the engine idle and then serves every request arriving while it
 * runs: if the request that started it finishes first, the loop dies mid-flight and the
 * engine never steps again (every later request hangs). And a request waiting for steps
 * that another request's loop runs has nothing pending in its own context, so workerd
 * cancels it as hung. So each request polls the engine from its own context (waitUntil)
 * from its start until the engine is idle, past its own response if need be.
 *
 * Workers allow waitUntil 30 s past the response: an engine that stays busy longer than
 * that without a pause can still lose its loop. docs/workerd.md lists it as a limit.
 */
import type { Engine } from '../../engine/types.js';

const POLL_MS = 20;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves once the engine has had no sequence for a full poll interval, i.e. its loop has exited. */
export async function untilEngineIdle(engine: Engine): Promise<void> {
  let idlePolls = 0;
  // Two idle polls in a row: the loop's last yield and exit happen after `running` drops to 0.
  while (idlePolls < 2) {
    await sleep(POLL_MS);
    idlePolls = engine.stats().running === 0 ? idlePolls + 1 : 0;
  }
}
