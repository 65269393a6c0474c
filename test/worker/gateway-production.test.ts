/**
 * The gateway's production duties, in workerd: deadlines against a hung loopback server
 * (accepts and never answers, or stops mid-stream), retries before the first byte,
 * readiness from the upstreams, authentication that never fails open, named client keys
 * with their own limits, and what the gateway reports (request log, /metrics, request
 * id and trace context from client to upstream), in front of the real Node server.
 */
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import gateway from '../../src/runtime/worker/gateway.js';
import golden from '../fixtures/golden-greedy.json';
import { postJson, recordingUpstream, ssePayloads, workerEnv } from './helpers.js';

const nodeServerUrl = inject('nodeServerUrl');
const hungUrl = inject('hungUpstreamUrl');

function fleet(upstreams: Record<string, unknown>[], extra: Record<string, unknown> = {}) {
  return workerEnv({ UPSTREAMS: JSON.stringify(upstreams), ...extra });
}

const completion = { model: 'stories260k', prompt: golden.prompt, max_tokens: 8, temperature: 0 };
const fast = { connect_timeout_seconds: 0.3, first_byte_timeout_seconds: 0.3, idle_timeout_seconds: 0.3 };
const get = (env: Record<string, unknown>, path: string, headers: Record<string, string> = {}) =>
  gateway.fetch(new Request(`http://worker.test${path}`, { headers }), env);

async function heldByHungServer(): Promise<number> {
  return ((await (await fetch(`${hungUrl}/__hung/open`)).json()) as { open: number }).open;
}

/** The gateway's request log lines written while `run` runs. */
async function logLines(run: () => Promise<void>): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [];
  const spy = vi.spyOn(console, 'log').mockImplementation((line: unknown) => {
    if (typeof line === 'string' && line.startsWith('{')) lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return lines;
}

afterEach(() => vi.restoreAllMocks());

describe('upstream deadlines against a hung server', () => {
  it('answers 504 in the error shape naming the upstream when it accepts and never answers, and lets go of the connection', async () => {
    const env = fleet([{ name: 'stuck', url: `${hungUrl}/hang`, ...fast }]);
    const started = Date.now();
    const response = await postJson(gateway, env, '/v1/completions', { ...completion, stream: true });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(response.status).toBe(504);
    const body = (await response.json()) as { object: string; code: number; message: string };
    expect(body).toMatchObject({ object: 'error', code: 504 });
    expect(body.message).toMatch(/stuck did not answer within its connect timeout \(300 ms\)/);
    expect(body.message).not.toContain('127.0.0.1');
    await vi.waitFor(async () => expect(await heldByHungServer()).toBe(0), { timeout: 3000 });
  });

  it('times out a non-streamed request and /generate on the first-byte deadline', async () => {
    const env = fleet([{ name: 'stuck', url: `${hungUrl}/hang`, ...fast }]);
    const plain = await postJson(gateway, env, '/v1/chat/completions', { model: 'stories260k', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
    expect(plain.status).toBe(504);
    expect(((await plain.json()) as { message: string }).message).toMatch(/stuck/);
    const generate = await postJson(gateway, env, '/generate', { prompt: 'Hi', max_tokens: 4 });
    expect(generate.status).toBe(504);
  });

  it('times out headers without a body on the first-byte deadline', async () => {
    const env = fleet([{ name: 'mute', url: `${hungUrl}/silent`, ...fast }]);
    const response = await postJson(gateway, env, '/v1/completions', { ...completion, stream: true });
    expect(response.status).toBe(504);
    expect(((await response.json()) as { message: string }).message).toMatch(/mute sent no response body within its first-byte timeout \(300 ms\)/);
  });

  it('fails over from a hung upstream to the Node server before the first byte, then keeps it out of rotation', async () => {
    const env = fleet(
      [
        { name: 'stuck', url: `${hungUrl}/hang`, weight: 1000, ...fast },
        { name: 'node', url: nodeServerUrl, weight: 1 },
      ],
      { LOG_REQUESTS: 'true' },
    );
    const lines = await logLines(async () => {
      for (let i = 0; i < 3; i++) {
        const response = await postJson(gateway, env, '/v1/completions', { ...completion, stream: true });
        expect(response.status).toBe(200);
        expect((await ssePayloads(response)).at(-1)).toBe('[DONE]');
      }
    });
    expect(lines.map((line) => [line.upstream, line.attempts])).toEqual([
      ['node', 2],
      ['node', 1],
      ['node', 1],
    ]);
    const metrics = await (await get(env, '/metrics')).text();
    expect(metrics).toMatch(/edge_llm_gateway_upstream_ejections_total\{upstream="stuck"\} 1/);
  });

  it('ends a stream that stops mid-way with a 504 error event naming the upstream, then [DONE]', async () => {
    const env = fleet([{ name: 'staller', url: `${hungUrl}/stall`, ...fast }]);
    const response = await postJson(gateway, env, '/v1/completions', { ...completion, stream: true });
    expect(response.status).toBe(200);
    const payloads = await ssePayloads(response);
    expect(JSON.parse(payloads[0]).choices[0].text).toBe(' Once');
    expect(JSON.parse(payloads.at(-2)!)).toMatchObject({ error: { code: 504, message: expect.stringMatching(/staller stopped sending for longer than its idle timeout \(300 ms\)/) } });
    expect(payloads.at(-1)).toBe('[DONE]');
    const metrics = await (await get(env, '/metrics')).text();
    expect(metrics).toMatch(/edge_llm_gateway_upstream_ejections_total\{upstream="staller"\} 1/);
  });

  it('reports readiness from the upstreams on /health (503 when none is up) while /health/live stays 200', async () => {
    const down = fleet([{ name: 'stuck', url: `${hungUrl}/hang`, ...fast }], { API_KEY: 'sk-health' });
    const health = await get(down, '/health');
    expect(health.status).toBe(503);
    expect(await health.json()).toMatchObject({ object: 'error', code: 503, message: expect.stringMatching(/No upstream is up \(0 of 1\)/) });
    expect((await get(down, '/health/live')).status).toBe(200);

    const up = fleet([
      { name: 'stuck', url: `${hungUrl}/hang`, ...fast },
      { name: 'node', url: nodeServerUrl },
    ]);
    const ready = await get(up, '/health');
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok', upstreams_up: 1, upstreams: 2 });
  });
});

describe('retries before the first byte', () => {
  function scripted(statuses: Array<{ status: number; retryAfter?: string }>) {
    const calls: number[] = [];
    const ok = recordingUpstream(' ok');
    return {
      calls,
      async fetch(url: string, init: RequestInit) {
        const next = statuses[calls.length];
        calls.push(next?.status ?? 200);
        if (next === undefined) return ok.fetch(url, init);
        const headers: Record<string, string> = next.retryAfter === undefined ? {} : { 'retry-after': next.retryAfter };
        return Response.json({ object: 'error', message: 'busy', code: next.status }, { status: next.status, headers });
      },
    };
  }

  it('waits out a short Retry-After on a 503 or 429 and retries, within the attempts', async () => {
    const upstream = scripted([{ status: 503, retryAfter: '0' }, { status: 429, retryAfter: '0' }]);
    const env = fleet([{ name: 'only', service: 'SVC' }], { SVC: upstream });
    const response = await postJson(gateway, env, '/v1/completions', { ...completion, stream: true });
    expect(response.status).toBe(200);
    expect(upstream.calls).toEqual([503, 429, 200]);
  });

  it('stops at UPSTREAM_MAX_ATTEMPTS, and does not wait past the retry budget', async () => {
    const always = scripted(Array.from({ length: 10 }, () => ({ status: 503, retryAfter: '0' })));
    const env = fleet([{ name: 'only', service: 'SVC' }], { SVC: always, UPSTREAM_MAX_ATTEMPTS: '2' });
    const response = await postJson(gateway, env, '/v1/completions', completion);
    expect(response.status).toBe(503);
    expect(always.calls).toHaveLength(2);

    const slow = scripted([{ status: 429, retryAfter: '30' }]);
    const budgeted = fleet([{ name: 'only', service: 'SVC' }], { SVC: slow, UPSTREAM_RETRY_BUDGET_SECONDS: '1' });
    const started = Date.now();
    const refused = await postJson(gateway, budgeted, '/v1/completions', completion);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('30');
    expect(slow.calls).toHaveLength(1);
  });

  it('tries a 429 elsewhere without taking that upstream out of rotation', async () => {
    const limited = scripted([{ status: 429 }]);
    // The lottery's draw, fixed: "limited" first every time (by weight alone the spare came first once in ~500 runs).
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const env = fleet(
      [
        { name: 'limited', service: 'A', weight: 1000 },
        { name: 'spare', service: 'B', weight: 1 },
      ],
      { A: limited, B: recordingUpstream(' ok') },
    );
    expect((await postJson(gateway, env, '/v1/completions', completion)).status).toBe(200);
    // Still first in line: the next request tries it again (and it answers now).
    expect((await postJson(gateway, env, '/v1/completions', completion)).status).toBe(200);
    expect(limited.calls).toEqual([429, 200]);
  });
});

describe('authentication never fails open', () => {
  it('refuses every request with a 500 naming the setting when API_KEY is bound as a list', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const env = fleet([{ name: 'node', url: nodeServerUrl }], { API_KEY: ['k1', 'k2'] });
    for (const headers of [{}, { authorization: 'Bearer k1' }] as Record<string, string>[]) {
      const response = await postJson(gateway, env, '/v1/completions', completion, headers);
      expect(response.status).toBe(500);
      expect(((await response.json()) as { message: string }).message).toMatch(/API_KEY must be one key as a string, got a list/);
    }
    expect((await get(env, '/health')).status).toBe(500);
    expect(logged).toHaveBeenCalled();
  });

  it('refuses API_KEY holding a JSON list, and API_KEYS it cannot read', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    // A key that reads as JSON still guards the reason (the gateway checks it as given), and never lets anyone in.
    const jsonKey = fleet([{ name: 'node', url: nodeServerUrl }], { API_KEY: '["k1","k2"]' });
    expect((await postJson(gateway, jsonKey, '/v1/completions', completion)).status).toBe(401);
    expect((await postJson(gateway, jsonKey, '/v1/completions', completion, { authorization: 'Bearer k1' })).status).toBe(401);
    const named = await postJson(gateway, jsonKey, '/v1/completions', completion, { authorization: 'Bearer ["k1","k2"]' });
    expect(named.status).toBe(500);
    expect(((await named.json()) as { message: string }).message).toMatch(/API_KEY looks like JSON/);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ API_KEYS: '[{"name":"a","key":"k1"' }, /API_KEYS must be a JSON list/],
      [{ API_KEYS: '[{"name":"a"}]' }, /give exactly one of key and sha256/],
      [{ API_KEYS: '[{"name":"a","key":"k1","tokens_per_min":5}]' }, /unknown field "tokens_per_min"/],
      [{ API_KEYS: '[{"name":"a","key":"k1"},{"name":"a","key":"k2"}]' }, /distinct name/],
    ];
    for (const [vars, message] of cases) {
      const response = await postJson(gateway, fleet([{ name: 'node', url: nodeServerUrl }], vars), '/v1/completions', completion);
      expect(response.status).toBe(500);
      expect(((await response.json()) as { message: string }).message).toMatch(message);
    }
  });
});

async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return [...digest].map((b) => b.toString(16).padStart(2, '0')).join('');
}

describe('named client keys with their own limits', () => {
  const as = (key: string) => ({ authorization: `Bearer ${key}` });

  it('admits each key by its key or its SHA-256, and counts each key against its own rate', async () => {
    const env = fleet([{ name: 'rec', service: 'REC' }], {
      REC: recordingUpstream(' ok'),
      API_KEYS: JSON.stringify([
        { name: 'alice', key: 'sk-alice', rate_limit_requests: 1, rate_limit_period_seconds: 60 },
        { name: 'bob', sha256: await sha256Hex('sk-bob') },
      ]),
      RATE_LIMIT_REQUESTS: '3',
    });
    expect((await postJson(gateway, env, '/v1/completions', completion, as('sk-alice'))).status).toBe(200);
    const limited = await postJson(gateway, env, '/v1/completions', completion, as('sk-alice'));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // bob has the fleet-wide 3.
    const bob = [];
    for (let i = 0; i < 4; i++) bob.push((await postJson(gateway, env, '/v1/completions', completion, as('sk-bob'))).status);
    expect(bob).toEqual([200, 200, 200, 429]);
    expect((await postJson(gateway, env, '/v1/completions', completion, as('sk-carol'))).status).toBe(401);
    expect((await postJson(gateway, env, '/v1/completions', completion)).status).toBe(401);
  });

  it("caps each key's concurrent streams on its own", async () => {
    const env = fleet([{ name: 'node', url: nodeServerUrl }], {
      API_KEYS: JSON.stringify([
        { name: 'alice', key: 'sk-alice', max_concurrent_requests: 1 },
        { name: 'bob', key: 'sk-bob', max_concurrent_requests: 2 },
      ]),
    });
    const long = { model: 'stories260k', prompt: golden.prompt, max_tokens: 400, ignore_eos: true, stream: true };
    const first = await postJson(gateway, env, '/v1/completions', long, as('sk-alice'));
    const reader = first.body!.getReader();
    await reader.read();
    expect((await postJson(gateway, env, '/v1/completions', { ...long, max_tokens: 2 }, as('sk-alice'))).status).toBe(429);
    const bobs = [await postJson(gateway, env, '/v1/completions', long, as('sk-bob')), await postJson(gateway, env, '/v1/completions', long, as('sk-bob'))];
    expect(bobs.map((r) => r.status)).toEqual([200, 200]);
    expect((await postJson(gateway, env, '/v1/completions', long, as('sk-bob'))).status).toBe(429);
    await Promise.all(bobs.map((r) => r.body!.cancel()));
    await reader.cancel();
  });

  it('holds a key to its tokens per minute, counted from what the upstream reports', async () => {
    const env = fleet([{ name: 'node', url: nodeServerUrl }], {
      API_KEYS: JSON.stringify([
        { name: 'alice', key: 'sk-alice', tokens_per_minute: 10 },
        { name: 'bob', key: 'sk-bob' },
      ]),
    });
    const spend = { ...completion, max_tokens: 12, ignore_eos: true };
    const first = await postJson(gateway, env, '/v1/completions', spend, as('sk-alice'));
    expect(first.status).toBe(200);
    await first.text();
    const limited = await postJson(gateway, env, '/v1/completions', spend, as('sk-alice'));
    expect(limited.status).toBe(429);
    expect(((await limited.json()) as { message: string }).message).toMatch(/Token limit per minute/);
    expect((await postJson(gateway, env, '/v1/completions', spend, as('sk-bob'))).status).toBe(200);
  });

  it("counts Anthropic's and the Responses API's usage against the key when it forwards them as received, streamed and not", async () => {
    const keys = JSON.stringify([{ name: 'alice', key: 'sk-alice', tokens_per_minute: 10 }]);
    const messages = { model: 'stories260k', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 12, temperature: 0 };
    const responses = { model: 'stories260k', input: 'Once upon a time', max_output_tokens: 12, temperature: 0 };
    for (const [path, body] of [['/v1/messages', messages], ['/v1/responses', responses]] as const) {
      for (const stream of [false, true]) {
        // A fresh budget each time: the Node server speaks both APIs, so the gateway forwards them untranslated.
        const env = fleet([{ name: 'node', url: nodeServerUrl }], { API_KEYS: keys });
        const first = await postJson(gateway, env, path, { ...body, stream }, as('sk-alice'));
        expect(first.status).toBe(200);
        await first.text();
        const limited = await postJson(gateway, env, path, { ...body, stream }, as('sk-alice'));
        expect(limited.status, `${path} stream ${stream}`).toBe(429);
        await limited.text();
      }
    }
  });

  it('with authentication off, shares one budget whatever bearer token a client invents', async () => {
    const env = fleet([{ name: 'rec', service: 'REC' }], { REC: recordingUpstream(' ok'), RATE_LIMIT_REQUESTS: '2' });
    const statuses = [];
    for (const token of ['made-up-1', 'made-up-2', 'made-up-3']) statuses.push((await postJson(gateway, env, '/v1/completions', completion, as(token))).status);
    expect(statuses).toEqual([200, 200, 429]);
  });
});

describe('what the gateway reports', () => {
  function headerRecorder() {
    const seen: Headers[] = [];
    const upstream = recordingUpstream(' ok');
    return {
      seen,
      async fetch(url: string, init: RequestInit) {
        seen.push(new Headers(init.headers));
        return upstream.fetch(url, init);
      },
    };
  }

  it('forwards the request id and W3C trace context upstream and returns the id, on the OpenAI routes and /generate', async () => {
    const upstream = headerRecorder();
    const env = fleet([{ name: 'rec', service: 'REC' }], { REC: upstream });
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const headers = { 'x-request-id': 'req-abc-123', traceparent, tracestate: 'vendor=opaque' };
    const response = await postJson(gateway, env, '/v1/completions', completion, headers);
    expect(response.headers.get('x-request-id')).toBe('req-abc-123');
    const generate = await postJson(gateway, env, '/generate', { prompt: 'Hi', max_tokens: 2 }, headers);
    expect(generate.status).toBe(200);
    expect(generate.headers.get('x-request-id')).toBe('req-abc-123');
    for (const seen of upstream.seen) {
      expect(seen.get('x-request-id')).toBe('req-abc-123');
      expect(seen.get('traceparent')).toBe(traceparent);
      expect(seen.get('tracestate')).toBe('vendor=opaque');
    }
    expect(upstream.seen).toHaveLength(2);

    // No id given: one is made and is the same upstream and back; a malformed traceparent is not passed on.
    const anonymous = await postJson(gateway, env, '/v1/completions', completion, { traceparent: 'not-a-trace' });
    const id = anonymous.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(upstream.seen[2].get('x-request-id')).toBe(id);
    expect(upstream.seen[2].has('traceparent')).toBe(false);
  });

  it('counts requests by status, upstream and key (401s and 429s included), time to first byte and tokens in /metrics, and logs each request', async () => {
    const env = fleet([{ name: 'node', url: nodeServerUrl }], {
      API_KEYS: JSON.stringify([{ name: 'alice', key: 'sk-alice', rate_limit_requests: 2 }]),
      LOG_REQUESTS: 'true',
    });
    const alice = { authorization: 'Bearer sk-alice' };
    const lines = await logLines(async () => {
      const plain = await postJson(gateway, env, '/v1/completions', { ...completion, max_tokens: 5, ignore_eos: true }, alice);
      expect(plain.status).toBe(200);
      await plain.text();
      const streamed = await postJson(gateway, env, '/v1/completions', { ...completion, max_tokens: 6, ignore_eos: true, stream: true }, alice);
      await streamed.text();
      expect((await postJson(gateway, env, '/v1/completions', completion, alice)).status).toBe(429);
      expect((await postJson(gateway, env, '/v1/completions', completion, { authorization: 'Bearer wrong' })).status).toBe(401);
    });
    expect(lines.map((l) => [l.status, l.key, l.upstream])).toEqual([
      [200, 'alice', 'node'],
      [200, 'alice', 'node'],
      [429, 'alice', 'none'],
      [401, 'anonymous', 'none'],
    ]);
    expect(lines[0]).toMatchObject({ route: '/v1/completions', completion_tokens: 5, prompt_tokens: expect.any(Number) });
    expect(lines[1]).toMatchObject({ completion_tokens: 6, ttfb_ms: expect.any(Number) });
    expect(JSON.stringify(lines)).not.toContain('sk-alice');

    const metrics = await (await get(env, '/metrics')).text();
    const series = (name: string, labels: string) => Number(new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(metrics)?.[1]);
    expect(series('edge_llm_gateway_requests_total', 'route="/v1/completions",status="200",upstream="node",key="alice"')).toBe(2);
    expect(series('edge_llm_gateway_requests_total', 'route="/v1/completions",status="429",upstream="none",key="alice"')).toBe(1);
    expect(series('edge_llm_gateway_requests_total', 'route="/v1/completions",status="401",upstream="none",key="anonymous"')).toBe(1);
    expect(series('edge_llm_gateway_tokens_total', 'upstream="node",key="alice",kind="completion"')).toBe(11);
    expect(series('edge_llm_gateway_time_to_first_byte_seconds_count', 'upstream="node"')).toBe(2);
    expect(metrics).not.toContain('sk-alice');
  });
});

describe('at the edge, before any upstream', () => {
  it('refuses out-of-vocabulary logit_bias ids with a 400 naming the field', async () => {
    const upstream = recordingUpstream(' ok');
    const env = fleet([{ name: 'rec', service: 'REC' }], { REC: upstream });
    const response = await postJson(gateway, env, '/v1/chat/completions', { model: 'stories260k', messages: [{ role: 'user', content: 'Hi' }], logit_bias: { '512': 5 } });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ param: 'logit_bias', message: expect.stringMatching(/out-of-vocab.*Vocabulary size: 512/) });
    expect(upstream.requests).toHaveLength(0);
    expect((await postJson(gateway, env, '/v1/completions', { ...completion, logit_bias: { '511': 5 } })).status).toBe(200);
  });

  it('refuses a prompt too long to fit by its length, without tokenizing it', async () => {
    const env = fleet([{ name: 'rec', service: 'REC' }], { REC: recordingUpstream(' ok') });
    const started = Date.now();
    const response = await postJson(gateway, env, '/v1/completions', { ...completion, prompt: 'Once upon a time '.repeat(600_000) });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toMatch(/10200000 characters: more than fit in this model's context of 512 tokens/);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
