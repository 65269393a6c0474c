/**
 * What `npm run dev` serves: wrangler bundles src/runtime/worker/main.ts with wrangler.toml
 * (the real .wasm and .onnx module imports, the vars) and runs it in workerd, here on a
 * free loopback port. Every request is a separate request to the Worker, as deployed;
 * the in-workerd tests call the handler directly, which cannot show how overlapping
 * requests share the engine, nor whether the response leaves workerd token by token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import golden from '../fixtures/golden-greedy.json';
import { REPO_ROOT } from '../helpers/model.js';

// No metrics, no cf.json download, no update check: the tests run offline.
process.env.WRANGLER_SEND_METRICS = 'false';
process.env.CLOUDFLARE_CF_FETCH_ENABLED = 'false';
process.env.WRANGLER_HIDE_BANNER = 'true';
const { unstable_startWorker } = await import('wrangler');

let worker: Awaited<ReturnType<typeof unstable_startWorker>>;
let baseUrl: string;

beforeAll(async () => {
  worker = await unstable_startWorker({
    config: `${REPO_ROOT}wrangler.toml`,
    dev: { server: { hostname: '127.0.0.1', port: 0 }, inspector: false, watch: false, persist: false, remote: false, logLevel: 'warn' },
  });
  baseUrl = (await worker.url).origin;
});

afterAll(async () => {
  await worker?.dispose();
});

function generate(body: Record<string, unknown>): Promise<Response> {
  return fetch(`${baseUrl}/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: golden.prompt, temperature: 0, ...body }),
  });
}

/** The streamed /generate text, with when (ms after the request) each event arrived. */
async function timedStream(response: Response, start: number): Promise<{ text: string; arrivals: number[] }> {
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let text = '';
  const arrivals: number[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      text += (JSON.parse(buffer.slice('data: '.length, end)) as { text: string[] }).text[0];
      buffer = buffer.slice(end + 2);
      arrivals.push(performance.now() - start);
    }
  }
  return { text, arrivals };
}

describe('wrangler dev with the embedded model', () => {
  it('serves the routes with the vars of wrangler.toml', async () => {
    expect((await fetch(`${baseUrl}/health`)).status).toBe(200);
    const models = (await (await fetch(`${baseUrl}/v1/models`)).json()) as { data: { id: string; max_model_len: number }[] };
    expect(models.data.map((m) => [m.id, m.max_model_len])).toEqual([['stories260k', 512]]);
  });

  it('streams the golden text token by token: events arrive spread over the generation, not together at its end', async () => {
    await (await generate({ max_tokens: 5 })).text(); // engine loaded
    const start = performance.now();
    const { text, arrivals } = await timedStream(await generate({ max_tokens: golden.completion_ids.length, stream: true }), start);
    expect(text).toBe(golden.completion_text);
    // A buffered response delivers every event at once, at the end: in one or two
    // milliseconds. (No ratio to the time to first event: under load that swings widely.)
    expect(new Set(arrivals.map((t) => Math.round(t))).size).toBeGreaterThan(10);
  });

  it('completes overlapping requests and keeps serving after the one that started the engine loop is gone', async () => {
    const start = performance.now();
    const long = generate({ max_tokens: 300, ignore_eos: true, stream: true });
    await new Promise((resolve) => setTimeout(resolve, 30));
    const short = generate({ max_tokens: 20, stream: true });
    const [longResult, shortResult] = await Promise.all([long.then((r) => timedStream(r, start)), short.then((r) => timedStream(r, start))]);
    expect(longResult.text.startsWith(golden.completion_text)).toBe(true);
    expect(golden.completion_text.startsWith(shortResult.text)).toBe(true);
    expect(shortResult.text.length).toBeGreaterThan(50);
    // Batched, not queued: the short one ends before the long one.
    expect(shortResult.arrivals.at(-1)!).toBeLessThan(longResult.arrivals.at(-1)!);

    // The short request started no loop; the long one did, and is gone now.
    const first = generate({ max_tokens: 10, stream: true });
    const second = generate({ max_tokens: 100, stream: true });
    const firstText = (await timedStream(await first, start)).text;
    expect(golden.completion_text.startsWith(firstText)).toBe(true);
    expect((await timedStream(await second, start)).text).toBe(golden.completion_text);
    const after = await generate({ max_tokens: golden.completion_ids.length });
    expect(((await after.json()) as { text: string[] }).text).toEqual([golden.prompt + golden.completion_text]);
  });
});
