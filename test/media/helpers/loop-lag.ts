/** Largest gap between 10 ms timer ticks while `work` runs (ms past the 10): how long the event loop was held. */
export async function maxLoopLag(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let max = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    max = Math.max(max, now - last - 10);
    last = now;
  }, 10);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return Math.max(max, performance.now() - last - 10);
}
