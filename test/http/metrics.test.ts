/**
 * GET /metrics after known traffic: vLLM's series with the values that traffic implies,
 * the refusals by reason, GET /version, and the one log line per request.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../src/config/server-config.js';
import { createApp, serverActivity } from '../../src/http/app.js';
import type { Engine } from '../../src/engine/types.js';
import { Counter, Gauge, Histogram, Registry } from '../../src/http/observability/prometheus.js';
import { oneTwoFiveBuckets } from '../../src/http/observability/server-metrics.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { nodeGuideCompiler } from '../../src/runtime/node/guides.js';
import { MODEL, MODEL_DIR, golden, loadEngine, postJson } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

function appWithLog(settings: Record<string, unknown> = {}) {
  const config = parseServerConfig({ modelDir: MODEL_DIR, servedModelName: MODEL, ...settings });
  const lines: Record<string, unknown>[] = [];
  const activity = serverActivity(engine, config, (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  return { app: createApp({ engine, config, guideCompiler: nodeGuideCompiler(engine), activity }), lines };
}

/** The samples of a Prometheus text exposition: "name{labels}" → value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    out.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return out;
}

async function scrape(app: ReturnType<typeof appWithLog>['app']): Promise<{ text: string; values: Map<string, number> }> {
  const response = await app.request('/metrics');
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  return { text, values: samples(text) };
}

const label = `model_name="${MODEL}"`;
const completion = { model: MODEL, prompt: golden.prompt, max_tokens: 5, temperature: 0 };

describe('GET /metrics', () => {
  it('counts tokens, finished requests, latencies and refusals under vLLM names', async () => {
    const { app } = appWithLog({ apiKey: 'k' });
    const auth = { headers: { 'content-type': 'application/json', authorization: 'Bearer k' } };
    expect((await postJson(app, '/v1/completions', completion, auth)).status).toBe(200);
    expect((await postJson(app, '/v1/completions', { ...completion, n: 2, temperature: 1, seed: 7, ignore_eos: true }, auth)).status).toBe(200);
    const streamed = await postJson(app, '/v1/completions', { ...completion, stream: true }, auth);
    await streamed.text();
    // A stop string the text hits: finished_reason "stop" (the golden text is known).
    const stopAt = golden.completion_text.trim().split(' ')[1]!;
    expect((await postJson(app, '/v1/completions', { ...completion, max_tokens: 20, stop: [stopAt] }, auth)).status).toBe(200);
    // Refusals: no key, wrong content type (with the key), a bad request.
    expect((await postJson(app, '/v1/completions', completion)).status).toBe(401);
    expect((await app.request('/v1/completions', { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'text/plain' }, body: '{}' })).status).toBe(415);
    expect((await postJson(app, '/v1/completions', { ...completion, max_tokens: -1 }, auth)).status).toBe(400);

    const { text, values } = await scrape(app);
    const promptTokens = golden.prompt_ids.length;
    expect(values.get(`vllm:prompt_tokens_total{${label}}`)).toBe(promptTokens * 4);
    const stopRequestTokens = values.get(`vllm:generation_tokens_total{${label}}`)! - (5 + 10 + 5);
    expect(stopRequestTokens).toBeGreaterThan(0);
    expect(stopRequestTokens).toBeLessThan(20);
    expect(values.get(`vllm:request_success_total{${label},finished_reason="length"}`)).toBe(4);
    expect(values.get(`vllm:request_success_total{${label},finished_reason="stop"}`)).toBe(1);
    expect(values.get(`vllm:num_requests_running{${label}}`)).toBe(0);
    expect(values.get(`vllm:num_requests_waiting{${label}}`)).toBe(0);
    expect(values.get(`vllm:time_to_first_token_seconds_count{${label}}`)).toBe(4);
    expect(values.get(`vllm:e2e_request_latency_seconds_count{${label}}`)).toBe(4);
    expect(values.get(`vllm:e2e_request_latency_seconds_bucket{${label},le="+Inf"}`)).toBe(4);
    // One gap per token after each sequence's first: 4 + 2×4 + 4 + (stop request's tokens − 1).
    expect(values.get(`vllm:time_per_output_token_seconds_count{${label}}`)).toBe(16 + stopRequestTokens - 1);
    expect(values.get(`vllm:request_prompt_tokens_count{${label}}`)).toBe(4);
    expect(values.get(`vllm:request_generation_tokens_sum{${label}}`)).toBe(20 + stopRequestTokens);
    expect(values.get(`edge_llm:requests_refused_total{${label},reason="unauthorized"}`)).toBe(1);
    expect(values.get(`edge_llm:requests_refused_total{${label},reason="unsupported_media_type"}`)).toBe(1);
    expect(values.get(`edge_llm:requests_refused_total{${label},reason="invalid_request"}`)).toBe(1);
    // vLLM's buckets and the exposition's own grammar.
    expect(text).toContain('# TYPE vllm:time_to_first_token_seconds histogram');
    expect(text).toContain(`vllm:time_to_first_token_seconds_bucket{${label},le="0.001"}`);
    expect(text).toContain(`vllm:time_to_first_token_seconds_bucket{${label},le="2560"}`);
    expect(text).toContain(`vllm:e2e_request_latency_seconds_bucket{${label},le="0.3"}`);
    expect(text).toContain('# TYPE vllm:prompt_tokens_total counter');
    expect(text).toContain('# TYPE vllm:num_requests_running gauge');
    expect(text.endsWith('\n')).toBe(true);
  });

  it('shows a stream as running while it runs, and an abandoned one as aborted', async () => {
    const { app } = appWithLog();
    const response = await postJson(app, '/v1/completions', { ...completion, max_tokens: 400, stream: true, ignore_eos: true });
    const reader = response.body!.getReader();
    await reader.read();
    const during = (await scrape(app)).values;
    expect(during.get(`vllm:num_requests_running{${label}}`)).toBe(1);
    await reader.cancel();
    // The engine sees the cancel at its next step; the record closes at once.
    const after = (await scrape(app)).values;
    expect(after.get(`vllm:num_requests_running{${label}}`)).toBe(0);
    expect(after.get(`vllm:request_success_total{${label},finished_reason="abort"}`)).toBe(1);
  });

  it('starts at zero, every series present', async () => {
    const { values } = await scrape(appWithLog().app);
    expect(values.get(`vllm:prompt_tokens_total{${label}}`)).toBe(0);
    expect(values.get(`vllm:e2e_request_latency_seconds_count{${label}}`)).toBe(0);
  });

  it("adds other processes' snapshots into one exposition (data parallelism)", () => {
    const make = () => {
      const registry = new Registry({ model_name: 'm' });
      const counter = registry.add(new Counter('c_total', 'c'));
      const histogram = registry.add(new Histogram('h', 'h', [1, 2]));
      let running = 0;
      registry.add(new Gauge('g', 'g', () => running));
      return { registry, counter, histogram, setRunning: (value: number) => (running = value) };
    };
    const a = make();
    const b = make();
    a.counter.inc({ reason: 'x' }, 2);
    b.counter.inc({ reason: 'x' }, 3);
    b.counter.inc({ reason: 'y' });
    a.histogram.observe(0.5);
    b.histogram.observe(1.5);
    b.histogram.observe(5);
    a.setRunning(1);
    b.setRunning(2);
    const merged = samples(a.registry.render([b.registry.snapshot()]));
    expect(merged.get('c_total{model_name="m",reason="x"}')).toBe(5);
    expect(merged.get('c_total{model_name="m",reason="y"}')).toBe(1);
    expect(merged.get('h_bucket{model_name="m",le="1"}')).toBe(1);
    expect(merged.get('h_bucket{model_name="m",le="2"}')).toBe(2);
    expect(merged.get('h_bucket{model_name="m",le="+Inf"}')).toBe(3);
    expect(merged.get('h_sum{model_name="m"}')).toBe(7);
    expect(merged.get('g{model_name="m"}')).toBe(3);
    // Alone, each reports only its own.
    expect(samples(a.registry.render()).get('c_total{model_name="m",reason="x"}')).toBe(2);
  });

  it('escapes label values as the text format requires', () => {
    const registry = new Registry({ model_name: 'a"b\\c\nd' });
    registry.add(new Counter('c_total', 'c'));
    expect(registry.render()).toContain('c_total{model_name="a\\"b\\\\c\\nd"} 0');
  });

  it("builds the token-count buckets as vLLM's 1-2-5 series", () => {
    expect(oneTwoFiveBuckets(512)).toEqual([1, 2, 5, 10, 20, 50, 100, 200, 500]);
    expect(oneTwoFiveBuckets(1)).toEqual([1]);
  });
});

describe('refused by the engine', () => {
  it('counts a request the engine refuses as a refusal only, not as prompt tokens or a finished request', async () => {
    // No waiting room at all: the engine refuses every request with 503 as it is submitted.
    const strict = await createNodeEngine({ modelDir: MODEL_DIR, servedModelName: MODEL, limits: { maxWaitingRequests: 0 } });
    try {
      const config = parseServerConfig({ modelDir: MODEL_DIR, servedModelName: MODEL });
      const activity = serverActivity(strict, config);
      const app = createApp({ engine: strict, config, activity });
      expect((await postJson(app, '/v1/completions', completion)).status).toBe(503);
      const { values } = await scrape(app);
      expect(values.get(`vllm:prompt_tokens_total{${label}}`)).toBe(0);
      expect(values.get(`vllm:e2e_request_latency_seconds_count{${label}}`)).toBe(0);
      expect([...values.keys()].some((key) => key.startsWith('vllm:request_success_total{') && values.get(key)! > 0)).toBe(false);
      expect(values.get(`edge_llm:requests_refused_total{${label},reason="unavailable"}`)).toBe(1);
      expect(values.get(`vllm:num_requests_waiting{${label}}`)).toBe(0);
    } finally {
      await strict.dispose();
    }
  });
});

describe('a draining server', () => {
  it('answers new requests with 503 and Connection: close, and counts them', async () => {
    const config = parseServerConfig({ modelDir: MODEL_DIR, servedModelName: MODEL });
    const activity = serverActivity(engine, config);
    const app = createApp({ engine, config, activity });
    activity.draining = true;
    const response = await postJson(app, '/v1/completions', completion);
    expect(response.status).toBe(503);
    expect(response.headers.get('connection')).toBe('close');
    expect(((await response.json()) as { message: string }).message).toMatch(/shutting down/);
    expect((await app.request('/health')).status).toBe(503);
    expect(activity.openRequests).toBe(0);
    expect(activity.metrics.render()).toContain(`edge_llm:requests_refused_total{${label},reason="unavailable"} 2`);
  });
});

describe('GET /version', () => {
  it("reports package.json's version as vLLM shapes it", async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    const response = await appWithLog().app.request('/version');
    expect(await response.json()).toEqual({ version: pkg.version });
  });
});

describe('request log', () => {
  it('writes one JSON line per request: id, route, status, tokens, durations, and no prompt', async () => {
    const { app, lines } = appWithLog();
    await postJson(app, '/v1/completions', completion, { headers: { 'content-type': 'application/json', 'x-request-id': 'req-42' } });
    const streamed = await postJson(app, '/generate', { prompt: golden.prompt, max_tokens: 3, stream: true });
    expect(lines).toHaveLength(1); // the stream's line waits for its end
    await streamed.text();
    await app.request('/nowhere');
    expect(lines).toHaveLength(3);
    const [first, second, third] = lines;
    expect(first).toMatchObject({ id: 'req-42', method: 'POST', route: '/v1/completions', status: 200, prompt_tokens: golden.prompt_ids.length, generation_tokens: 5, finish_reasons: ['length'] });
    expect(first!.duration_ms as number).toBeGreaterThanOrEqual(first!.ttft_ms as number);
    expect(second).toMatchObject({ route: '/generate', status: 200, generation_tokens: 3 });
    expect(typeof second!.id).toBe('string');
    expect(third).toMatchObject({ route: '/nowhere', status: 404 });
    expect(third).not.toHaveProperty('prompt_tokens');
    for (const line of lines) expect(JSON.stringify(line)).not.toContain(golden.prompt);
  });

  it('includes the prompt only when logPrompts is set, and echoes the id as X-Request-Id', async () => {
    const { app, lines } = appWithLog({ logPrompts: true });
    const response = await postJson(app, '/generate', { prompt: golden.prompt, max_tokens: 2 });
    expect(response.headers.get('x-request-id')).toBe(lines[0]!.id);
    expect(lines[0]!.prompt).toBe(golden.prompt);
  });

  it('is off with logRequests false', async () => {
    const { app, lines } = appWithLog({ logRequests: false });
    await postJson(app, '/generate', { prompt: golden.prompt, max_tokens: 2 });
    expect(lines).toHaveLength(0);
  });
});
