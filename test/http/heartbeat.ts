import type { Hono } from 'hono';
import { expect } from 'vitest';
import { MODEL, postJson } from './helpers.js';

/**
 * Watches that the server keeps serving others while `work` runs: the event loop's lag
 * (a 10 ms timer), GET /health's latency (asked every 20 ms) and the gaps between the
 * tokens of a stream that runs all along (a new one starts whenever one ends). Not a
 * timing test: the bound is generous (1 s, some hundred decode steps), so only a request
 * that freezes the server (the seconds-long stalls of issue 13) trips it.
 */
export interface HeartbeatReport {
  maxLoopLagMs: number;
  maxHealthMs: number;
  maxTokenGapMs: number;
  healthStatuses: Set<number>;
  tokens: number;
}

export const STALL_BOUND_MS = 1000;

export async function withHeartbeat<T>(
  app: Hono,
  work: () => Promise<T>,
  options: { streamTokens?: number } = {},
): Promise<{ result: T; report: HeartbeatReport }> {
  const streamBody = { model: MODEL, prompt: 'Once upon a time', max_tokens: options.streamTokens ?? 400, ignore_eos: true, temperature: 0, stream: true };
  const report: HeartbeatReport = { maxLoopLagMs: 0, maxHealthMs: 0, maxTokenGapMs: 0, healthStatuses: new Set(), tokens: 0 };
  let running = true;

  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    report.maxLoopLagMs = Math.max(report.maxLoopLagMs, now - last - 10);
    last = now;
  }, 10);

  const health = (async () => {
    while (running) {
      const start = performance.now();
      const response = await app.request('/health');
      await response.arrayBuffer();
      report.maxHealthMs = Math.max(report.maxHealthMs, performance.now() - start);
      report.healthStatuses.add(response.status);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();

  const streams = (async () => {
    while (running) {
      const response = await postJson(app, '/v1/completions', streamBody);
      if (response.status !== 200) throw new Error(`the heartbeat stream was refused: ${response.status} ${await response.text()}`);
      const reader = response.body!.getReader();
      let previous = performance.now();
      for (;;) {
        const { done } = await reader.read();
        const now = performance.now();
        if (done) break;
        report.maxTokenGapMs = Math.max(report.maxTokenGapMs, now - previous);
        report.tokens += 1;
        previous = now;
        if (!running) {
          await reader.cancel();
          break;
        }
      }
    }
  })();

  // The stream is under way before the work starts.
  const failed = streams.then(
    () => new Error('the heartbeat stream ended'),
    (error: unknown) => error,
  );
  for (let waited = 0; report.tokens < 3; waited += 5) {
    if (waited > 10_000) throw new Error('the heartbeat stream did not start');
    const outcome = await Promise.race([failed, new Promise((resolve) => setTimeout(() => resolve(null), 5))]);
    if (outcome instanceof Error) throw outcome;
  }
  let result: T;
  try {
    result = await work();
  } finally {
    running = false;
    report.maxLoopLagMs = Math.max(report.maxLoopLagMs, performance.now() - last - 10);
    clearInterval(timer);
    await Promise.all([health, streams]);
  }
  return { result, report };
}

/** Asserts nothing stalled past STALL_BOUND_MS. */
export function expectNoStall(report: HeartbeatReport): void {
  expect(report.maxLoopLagMs, 'event-loop lag').toBeLessThan(STALL_BOUND_MS);
  expect(report.maxHealthMs, '/health latency').toBeLessThan(STALL_BOUND_MS);
  expect(report.maxTokenGapMs, 'inter-token gap of a running stream').toBeLessThan(STALL_BOUND_MS);
}
