/**
 * Lets the host's event loop run (network I/O, timers, new requests) between model
 * steps. A resolved promise is not enough: it only drains microtasks, so a busy step
 * loop would starve sockets. setImmediate (Node) and MessageChannel (browsers, workerd)
 * run after pending I/O without the 1 ms+ clamp of setTimeout(0).
 */
export function yieldToEventLoop(): Promise<void> {
  const g = globalThis as { setImmediate?: (fn: () => void) => void };
  if (typeof g.setImmediate === 'function') {
    return new Promise((resolve) => g.setImmediate!(resolve));
  }
  if (typeof MessageChannel === 'function') {
    return new Promise((resolve) => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => {
        channel.port1.close();
        resolve();
      };
      channel.port2.postMessage(null);
    });
  }
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * How long the step loop may keep the thread between yields where a yield is a posted task
 * (a page; workerd has setImmediate under nodejs_compat): about a third of a 60 Hz frame,
 * so the page still paints and takes input several times a frame.
 */
export const STEP_SLICE_MS = 5;

let sliceStartedAt = Number.NEGATIVE_INFINITY;

/**
 * The step loop's yield between model steps. With setImmediate (Node, workerd under
 * nodejs_compat) every step yields: it costs a few microseconds, and /health, new requests
 * and disconnects are seen between any two steps. Where a yield is a posted task (a
 * MessageChannel message: browsers) it cost ~0.1 ms a step in Chromium, a tenth of the
 * embedded model's step, and lets the thread go idle between steps; there the loop yields
 * once STEP_SLICE_MS have passed since its last yield, and between those only microtasks
 * run. Streams still move at every step: their consumers are promise-driven.
 */
export function yieldBetweenSteps(): Promise<void> {
  if (typeof (globalThis as { setImmediate?: unknown }).setImmediate === 'function') return yieldToEventLoop();
  const now = performance.now();
  if (now - sliceStartedAt < STEP_SLICE_MS) return Promise.resolve();
  return yieldToEventLoop().then(() => {
    sliceStartedAt = performance.now();
  });
}

/** Whether the event loop has gone through a full turn (I/O polled) since the watch was made. */
export interface LoopTurnWatch {
  readonly turned: boolean;
}

const NEVER_TURNS: LoopTurnWatch = { turned: false };

/**
 * A watch for one event-loop turn, for the step loop to skip its own yield after a step whose
 * model call already let the loop run: onnxruntime-node's `session.run` starts the native run
 * from a setImmediate, and a model thread's answer is a message, so in both the loop polled
 * I/O while the step was out. A yield on top of that is a second loop turn a token (~2% of the
 * embedded model's CPU a token, ~6 µs of ~300, paired in one process, loaded). The watch is an
 * immediate queued before the step starts: it runs in the turn's check phase ahead of the
 * model call's own immediate, so it has run exactly when a poll phase came between.
 * Without setImmediate (a page) it never reports a turn: the caller yields as before.
 */
export function watchLoopTurn(): LoopTurnWatch {
  const g = globalThis as { setImmediate?: (fn: () => void) => void };
  if (typeof g.setImmediate !== 'function') return NEVER_TURNS;
  const watch = { turned: false };
  g.setImmediate(() => {
    watch.turned = true;
  });
  return watch;
}
