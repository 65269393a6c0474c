import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { writingSseDirectly } from '../../src/runtime/node/sse.js';
import { MODEL, golden, loadEngine, testApp } from '../http/helpers.js';
import { serveInProcess, type InProcessServer } from './in-process-server.js';

// The real HTTP stack in-process, so the test can watch the engine's counters.
let engine: Engine;
// Twice: as @hono/node-server serves web streams, and as `npm start` serves SSE (src/runtime/node/sse.ts).
const servers: InProcessServer[] = [];
const urls: Record<string, string> = {};

beforeAll(async () => {
  engine = await loadEngine();
  const app = testApp(engine);
  const fetchers = { 'web streams': app.fetch, 'SSE written directly': writingSseDirectly(app.fetch) };
  for (const [mode, fetch] of Object.entries(fetchers)) {
    const server = await serveInProcess(fetch);
    urls[mode] = server.url;
    servers.push(server);
  }
});
afterAll(async () => {
  for (const server of servers) await server.close();
  await engine.dispose();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUntilIdle(timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (engine.stats().running > 0) {
    if (Date.now() > deadline) throw new Error(`engine still running ${engine.stats().running} sequence(s)`);
    await sleep(5);
  }
}

const MAX_TOKENS = 500;

describe.each(['web streams', 'SSE written directly'])('client disconnect (%s)', (mode) => {
  let url: string;
  beforeAll(() => {
    url = urls[mode]!;
  });

  it.each([
    ['/v1/completions', { model: MODEL, prompt: golden.prompt }],
    ['/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: golden.prompt }] }],
    ['/generate', { prompt: golden.prompt }],
  ])('%s: aborting a stream stops its generation; the server keeps serving', async (path, body) => {
    await waitUntilIdle();
    const before = engine.stats();
    const controller = new AbortController();
    const response = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true, ignore_eos: true, max_tokens: MAX_TOKENS }),
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    controller.abort();

    await waitUntilIdle();
    const stopped = engine.stats();
    await sleep(200);
    // No more steps once the sequence is gone, and it ended well before max_tokens.
    expect(engine.stats().steps).toBe(stopped.steps);
    expect(stopped.generatedTokens - before.generatedTokens).toBeLessThan(MAX_TOKENS);

    const next = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: golden.prompt, temperature: 0, max_tokens: 100 }),
    });
    expect(next.status).toBe(200);
    expect((await next.json()).choices[0].text).toBe(golden.completion_text);
  });

  it('a non-streaming request whose client leaves is stopped too', async () => {
    await waitUntilIdle();
    const before = engine.stats();
    const controller = new AbortController();
    const pending = fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: golden.prompt, ignore_eos: true, max_tokens: MAX_TOKENS }),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    // Wait until the engine is working on it, then leave.
    const deadline = Date.now() + 5000;
    while (engine.stats().running === 0 && Date.now() < deadline) await sleep(1);
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    await waitUntilIdle();
    expect(engine.stats().generatedTokens - before.generatedTokens).toBeLessThan(MAX_TOKENS);
  });
});
