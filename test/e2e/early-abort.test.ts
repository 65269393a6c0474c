/**
 * Streams aborted within milliseconds of starting (issue 24): every accepted request is
 * accounted for until it ends, however it ends. After 100 such aborts the running and
 * waiting gauges are back to 0, every request wrote its log line, and the heap is back
 * near where it started. The real HTTP stack in-process, both ways Node serves SSE.
 */
import { request as httpRequest } from 'node:http';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { Engine } from '../../src/engine/types.js';
import { createApp, serverActivity } from '../../src/http/app.js';
import type { ServerActivity } from '../../src/http/observability/activity.js';
import { writingSseDirectly } from '../../src/runtime/node/sse.js';
import { MODEL, MODEL_DIR, golden, loadEngine } from '../http/helpers.js';
import { serveInProcess, type InProcessServer } from './in-process-server.js';

let engine: Engine;
const servers: InProcessServer[] = [];
const homes: Record<string, { url: string; activity: ServerActivity; lines: string[] }> = {};

beforeAll(async () => {
  engine = await loadEngine();
  for (const mode of ['web streams', 'SSE written directly']) {
    const config = parseServerConfig({ modelDir: MODEL_DIR, servedModelName: MODEL, logRequests: true });
    const lines: string[] = [];
    const activity = serverActivity(engine, config, (line) => lines.push(line));
    const app = createApp({ engine, config, activity });
    const server = await serveInProcess(mode === 'web streams' ? app.fetch : writingSseDirectly(app.fetch));
    homes[mode] = { url: server.url, activity, lines };
    servers.push(server);
  }
});
afterAll(async () => {
  for (const server of servers) await server.close();
  await engine.dispose();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends a streaming request and destroys the socket `afterMs` after the body is written. */
function abortAfter(url: string, path: string, body: unknown, afterMs: number): Promise<void> {
  return new Promise((resolve) => {
    const payload = JSON.stringify(body);
    const req = httpRequest(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.end(payload, () => setTimeout(() => req.destroy(), afterMs));
  });
}

async function gauge(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`));
  return Number(line?.split(' ').at(-1));
}

async function settled(activity: ServerActivity, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (activity.openRequests > 0 || engine.stats().running > 0) {
    if (Date.now() > deadline) throw new Error(`${activity.openRequests} request(s) still open, ${engine.stats().running} sequence(s) running`);
    await sleep(10);
  }
}

// A full collection before each reading, so the figure is what is still referenced.
v8.setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

function heapUsed(): number {
  collect();
  return process.memoryUsage().heapUsed;
}

describe.each(['web streams', 'SSE written directly'])('streams aborted at once (%s)', (mode) => {
  it.each([
    ['/v1/completions', { model: MODEL, prompt: golden.prompt }],
    ['/generate', { prompt: golden.prompt }],
  ])('%s: 100 aborts within milliseconds leave no request open, gauges at 0, a log line each', async (path, body) => {
    const { url, activity, lines } = homes[mode]!;
    await settled(activity);
    const streaming = { ...body, stream: true, ignore_eos: true, max_tokens: 200 };
    // Spread over the first milliseconds: before the first token, at it, just after.
    const abortMany = (count: number) => Promise.all(Array.from({ length: count }, (_, i) => abortAfter(url, path, streaming, i % 5)));
    // A first round warms up what stays anyway (compiled code, pools); the baseline follows it.
    await abortMany(20);
    await settled(activity);
    const linesBefore = lines.length;
    const heapBefore = heapUsed();
    await abortMany(100);
    await settled(activity);
    expect(await gauge(url, 'vllm:num_requests_running')).toBe(0);
    expect(await gauge(url, 'vllm:num_requests_waiting')).toBe(0);
    const logged = lines.slice(linesBefore).map((line) => JSON.parse(line) as { route: string });
    expect(logged.filter((line) => line.route === path)).toHaveLength(100);
    // No per-request residue: well under the 16 KB a request leaked (1.6 MB per 100).
    expect(heapUsed() - heapBefore).toBeLessThan(1_000_000);

    const next = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: golden.prompt, temperature: 0, max_tokens: 100 }),
    });
    expect((await next.json()).choices[0].text).toBe(golden.completion_text);
  });
});
