import { readFileSync } from 'node:fs';
import type { Hono } from 'hono';
import { expect } from 'vitest';
import { MODEL, postJson } from './helpers.js';

/**
 * Watches that the server keeps serving others while `work` runs: the event loop's lag
 * (a 10 ms timer), GET /health's latency (asked every 20 ms) and the gaps between the
 * tokens of a stream that runs all along (a new one starts whenever one ends). Not a
 * timing test: the bound is generous (1 s, some hundred decode steps), so only a request
 * that freezes the server (the seconds-long stalls of issue 13) trips it.
 *
 * Load cannot fake a stall: each late tick's lag is split into what the process spent on
 * the CPU meanwhile (this thread's: process.threadCpuUsage where Node has it, the kernel's
 * schedstat on Linux, else the whole process's, an overestimate) — the loop held by work — and the rest, time the OS gave to other
 * processes (this machine's 2 cores run eight engineers' work at load 11–20). The bound
 * applies to the first (maxBlockedMs); the wall-clock figures get the bound plus the
 * longest such starvation, so a freeze of our own still fails at any load.
 *
 * `work` is handed the report as it fills (tokens streamed so far, ...), to judge what the
 * stream did while it ran; `options.model` names the served model when it is not the embedded one.
 */
export interface HeartbeatReport {
  /** Wall-clock lag of the 10 ms timer. */
  maxLoopLagMs: number;
  /** The longest late tick's lag counted only up to the CPU time the process used in it: the loop held by work. */
  maxBlockedMs: number;
  /** When the tick of maxBlockedMs came (performance.now()): what ran just before it held the loop. */
  maxBlockedAt: number;
  /** Over each run of late ticks, the lag beyond the CPU time used: the process waiting for a core. The longest run's. */
  maxStarvedMs: number;
  maxHealthMs: number;
  maxTokenGapMs: number;
  healthStatuses: Set<number>;
  tokens: number;
}

export const STALL_BOUND_MS = 1000;

export async function withHeartbeat<T>(
  app: Hono,
  work: (live: HeartbeatReport) => Promise<T>,
  options: { streamTokens?: number; model?: string } = {},
): Promise<{ result: T; report: HeartbeatReport }> {
  const streamBody = { model: options.model ?? MODEL, prompt: 'Once upon a time', max_tokens: options.streamTokens ?? 400, ignore_eos: true, temperature: 0, stream: true };
  const report: HeartbeatReport = { maxLoopLagMs: 0, maxBlockedMs: 0, maxBlockedAt: 0, maxStarvedMs: 0, maxHealthMs: 0, maxTokenGapMs: 0, healthStatuses: new Set(), tokens: 0 };
  let running = true;

  let last = performance.now();
  let lastCpu = cpuMs();
  let starvedRun = 0;
  const tick = () => {
    const now = performance.now();
    const cpu = cpuMs();
    const lag = now - last - 10;
    const blocked = Math.min(lag, cpu - lastCpu);
    report.maxLoopLagMs = Math.max(report.maxLoopLagMs, lag);
    if (blocked > report.maxBlockedMs) {
      report.maxBlockedMs = blocked;
      report.maxBlockedAt = now;
    }
    starvedRun = lag > 5 ? starvedRun + lag - blocked : 0;
    report.maxStarvedMs = Math.max(report.maxStarvedMs, starvedRun);
    last = now;
    lastCpu = cpu;
  };
  const timer = setInterval(tick, 10);

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
    result = await work(report);
  } finally {
    running = false;
    tick();
    clearInterval(timer);
    await Promise.all([health, streams]);
  }
  return { result, report };
}

/**
 * CPU milliseconds of this thread: Node 23.9+ says; on Linux the kernel's scheduler says
 * (/proc/thread-self/schedstat: nanoseconds on a CPU, read by the calling thread); else the
 * whole process's, which also counts the server's own threads (onnxruntime's, the tokenizer
 * and template threads) working while the loop is free: an overestimate.
 */
function cpuMs(): number {
  const own = (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage?.();
  if (own) return (own.user + own.system) / 1000;
  const scheduled = threadSchedstatMs();
  if (scheduled !== null) return scheduled;
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

let schedstatReadable = process.platform === 'linux';

function threadSchedstatMs(): number | null {
  if (!schedstatReadable) return null;
  try {
    const onCpuNs = Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]);
    if (Number.isFinite(onCpuNs)) return onCpuNs / 1e6;
  } catch {
    // No schedstat on this kernel: the process's figure.
  }
  schedstatReadable = false;
  return null;
}

/**
 * Asserts nothing stalled past `bound` (STALL_BOUND_MS): the loop was never held that long
 * by work, and /health, the timer and the stream were never later than that plus the
 * longest time the OS kept the process off the CPU.
 */
export function expectNoStall(
  report: HeartbeatReport,
  bound = STALL_BOUND_MS,
  /** A model call the stream must wait for whatever the server does (a long prefill on its thread), measured by the test on this machine. */
  modelStepMs = 0,
): void {
  const figures = JSON.stringify({ ...report, healthStatuses: [...report.healthStatuses] });
  expect(report.maxBlockedMs, `event loop held by work (${figures})`).toBeLessThan(bound);
  const wall = bound + report.maxStarvedMs;
  expect(report.maxLoopLagMs, `event-loop lag (${figures})`).toBeLessThan(wall);
  expect(report.maxHealthMs, `/health latency (${figures})`).toBeLessThan(wall);
  expect(report.maxTokenGapMs, `inter-token gap of a running stream (${figures})`).toBeLessThan(wall + modelStepMs);
}
