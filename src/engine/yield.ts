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
