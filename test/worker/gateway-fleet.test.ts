/**
 * The gateway's own duties, in workerd, in front of the Node server and of recording
 * upstreams: what reaches the upstream (everything the client asked, in the upstream's
 * vocabulary), refusals by name, upstream credentials from secrets (never echoed), and
 * the per-key edge limits (in memory and on the platform's rate-limiting binding).
 */
import { describe, expect, inject, it, vi } from 'vitest';
import { KeyLeases } from '../../src/gateway/edge-limits.js';
import gateway from '../../src/runtime/worker/gateway.js';
import golden from '../fixtures/golden-greedy.json';
import { postJson, recordingUpstream, ssePayloads, testBinding, workerEnv } from './helpers.js';

const nodeServerUrl = inject('nodeServerUrl');

interface Completion {
  choices: { text: string }[];
}

function fleet(upstreams: Record<string, unknown>[], extra: Record<string, unknown> = {}) {
  return workerEnv({ UPSTREAMS: JSON.stringify(upstreams), ...extra });
}

describe('structured output through the gateway to the Node server', () => {
  const env = fleet([{ name: 'node', url: nodeServerUrl, model: 'stories260k' }]);
  const schema = { type: 'object', properties: { age: { type: 'integer' } }, required: ['age'], additionalProperties: false };

  it('is honoured on /v1/completions and /generate (it was refused at the edge before)', async () => {
    const completion = await postJson(gateway, env, '/v1/completions', {
      model: 'stories260k',
      prompt: 'Lily is',
      max_tokens: 40,
      temperature: 0,
      guided_json: schema,
    });
    expect(completion.status).toBe(200);
    expect(Number.isInteger((JSON.parse(((await completion.json()) as Completion).choices[0].text) as { age: number }).age)).toBe(true);

    const generate = await postJson(gateway, env, '/generate', {
      prompt: 'Lily is',
      max_tokens: 40,
      temperature: 0,
      guided_choice: ['yes', 'no'],
    });
    expect(generate.status).toBe(200);
    expect(['Lily isyes', 'Lily isno']).toContain(((await generate.json()) as { text: string[] }).text[0]);
  });
});

describe('what reaches the upstream', () => {
  it('forwards tools, tool_choice, logit_bias, n, best_of, logprobs, stop and a 64-bit seed as received', async () => {
    const upstream = recordingUpstream(' ok');
    const env = fleet([{ name: 'a', service: 'RECORDER', model: 'stories260k', upstream_model: 'org/stories-260k' }], { RECORDER: upstream });
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const chat = {
      model: 'stories260k',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      logit_bias: { '42': -100 },
      n: 2,
      logprobs: true,
      top_logprobs: 3,
      stop: ['\n'],
      seed: 9223372036854775807n,
    };
    const bodyText = JSON.stringify(chat, (_k, v: unknown) => (typeof v === 'bigint' ? `@${v}` : v)).replace('"@9223372036854775807"', '9223372036854775807');
    const response = await gateway.fetch(
      new Request('http://worker.test/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: bodyText }),
      env,
    );
    expect(response.status).toBe(200);
    expect(upstream.requests).toHaveLength(1);
    const sent = upstream.requests[0] as Record<string, unknown>;
    const { seed: _seed, ...rest } = chat;
    expect(sent).toMatchObject({ ...rest, model: 'org/stories-260k' });
    expect(upstream.rawBodies[0]).toContain('"seed":9223372036854775807');

    await postJson(gateway, env, '/v1/completions', { model: 'stories260k', prompt: 'Hi', best_of: 3, n: 2, use_beam_search: true, guided_regex: 'a+' });
    expect(upstream.requests[1]).toMatchObject({ best_of: 3, n: 2, use_beam_search: true, guided_regex: 'a+', model: 'org/stories-260k' });
  });

  it('speaks the OpenAI API to an OpenAI upstream and refuses vLLM extras it lacks, by name', async () => {
    const upstream = recordingUpstream(' ok');
    const env = fleet([{ name: 'openai', service: 'RECORDER', model: 'stories260k', dialect: 'openai' }], { RECORDER: upstream });
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    const chat = { model: 'stories260k', messages: [{ role: 'user', content: 'Hi' }], guided_json: schema };
    expect((await postJson(gateway, env, '/v1/chat/completions', chat)).status).toBe(200);
    expect(upstream.requests[0]).toMatchObject({ response_format: { type: 'json_schema', json_schema: { schema } } });
    expect(upstream.requests[0]).not.toHaveProperty('guided_json');

    const topK = await postJson(gateway, env, '/v1/chat/completions', { ...chat, guided_json: undefined, top_k: 5 });
    expect(topK.status).toBe(400);
    expect(await topK.json()).toMatchObject({ param: 'top_k', message: expect.stringMatching(/not supported by the upstream serving this model \(openai\)/) });
    expect(upstream.requests).toHaveLength(1);
  });

  it('refuses what an upstream is configured not to support, naming the field', async () => {
    const upstream = recordingUpstream(' ok');
    const env = fleet([{ name: 'small', service: 'RECORDER', model: 'stories260k', unsupported: ['logit_bias', 'tools'] }], { RECORDER: upstream });
    const response = await postJson(gateway, env, '/v1/completions', { model: 'stories260k', prompt: 'Hi', logit_bias: { '1': 5 } });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { param: string }).param).toBe('logit_bias');
    expect(upstream.requests).toHaveLength(0);
  });

  it('sends the key from the named secret, and never shows it to the client', async () => {
    const service = testBinding<{ fetch: typeof fetch }>('TEST_UPSTREAM_SERVICE');
    const key = testBinding<string>('TEST_UPSTREAM_API_KEY');
    const request = { model: 'stories260k', prompt: golden.prompt, max_tokens: 10, temperature: 0 };
    const good = fleet([{ name: 'keyed', service: 'SVC', model: 'stories260k', api_key_secret: 'KEYED_SECRET' }], { SVC: service, KEYED_SECRET: key });
    expect((await postJson(gateway, good, '/v1/completions', request)).status).toBe(200);

    const secret = 'sk-wrong-but-secret-123';
    const bad = fleet([{ name: 'keyed', service: 'SVC', model: 'stories260k', api_key_secret: 'KEYED_SECRET' }], { SVC: service, KEYED_SECRET: secret });
    const refused = await postJson(gateway, bad, '/v1/completions', request);
    expect(refused.status).toBe(502);
    expect(await refused.text()).not.toContain(secret);
    const models = await (await gateway.fetch(new Request('http://worker.test/v1/models'), bad)).text();
    expect(models).not.toContain(secret);

    const missing = fleet([{ name: 'keyed', service: 'SVC', model: 'stories260k', api_key_secret: 'NOT_SET' }], { SVC: service });
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const error = await gateway.fetch(new Request('http://worker.test/v1/models'), missing);
    expect(logged).toHaveBeenCalled();
    logged.mockRestore();
    expect(error.status).toBe(500);
    expect(((await error.json()) as { message: string }).message).toMatch(/secret NOT_SET/);
  });
});

describe('a stream the upstream breaks off', () => {
  it('ends with an error event in the API shape, then [DONE], and is not retried on another upstream', async () => {
    const calls: string[] = [];
    const breaking = (name: string) => ({
      async fetch() {
        calls.push(name);
        const chunk = { choices: [{ index: 0, text: ' Once', finish_reason: null }] };
        let sent = false;
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent) return controller.error(new Error('connection reset'));
            sent = true;
            controller.enqueue(new TextEncoder().encode(`data: ${JSON.stringify(chunk)}\n\n`));
          },
        });
        return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
      },
    });
    const env = fleet(
      [
        { name: 'a', service: 'A', model: 'stories260k' },
        { name: 'b', service: 'B', model: 'stories260k' },
      ],
      { A: breaking('a'), B: breaking('b') },
    );
    const response = await postJson(gateway, env, '/v1/completions', { model: 'stories260k', prompt: 'Hi', stream: true });
    expect(response.status).toBe(200);
    const payloads = await ssePayloads(response);
    expect(JSON.parse(payloads[0]).choices[0].text).toBe(' Once');
    expect(JSON.parse(payloads.at(-2)!)).toMatchObject({ error: { code: 502, message: expect.stringMatching(/broke the stream off/) } });
    // As this project's server ends every stream, errors included.
    expect(payloads.at(-1)).toBe('[DONE]');
    expect(calls).toHaveLength(1);
  });
});

describe('edge limits', () => {
  const request = { model: 'stories260k', prompt: 'Hi', max_tokens: 2 };
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  /** Keys named as the key itself: limits count per authenticated key. */
  const keys = (...names: string[]) => JSON.stringify(names.map((name) => ({ name, key: name })));

  it('rate-limits per key with 429 and Retry-After (in memory)', async () => {
    const env = fleet([{ name: 'r', service: 'RECORDER', model: 'stories260k' }], {
      RECORDER: recordingUpstream(' ok'),
      RATE_LIMIT_REQUESTS: '2',
      RATE_LIMIT_PERIOD_SECONDS: '60',
      API_KEYS: keys('alice', 'bob'),
    });
    expect((await postJson(gateway, env, '/v1/completions', request, as('alice'))).status).toBe(200);
    expect((await postJson(gateway, env, '/v1/completions', request, as('alice'))).status).toBe(200);
    const limited = await postJson(gateway, env, '/v1/completions', request, as('alice'));
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(30);
    expect(await limited.json()).toMatchObject({ object: 'error', code: 429 });
    // Another key has its own budget; /generate counts too.
    expect((await postJson(gateway, env, '/v1/completions', request, as('bob'))).status).toBe(200);
    expect((await postJson(gateway, env, '/generate', { prompt: 'Hi', max_tokens: 2 }, as('bob'))).status).toBe(200);
    expect((await postJson(gateway, env, '/generate', { prompt: 'Hi', max_tokens: 2 }, as('bob'))).status).toBe(429);
  });

  it("rate-limits on the platform's rate-limiting binding", async () => {
    // The binding (limit 2 per 60 s in vitest.config.ts) counts per key for the whole test run.
    const carol = `carol-${crypto.randomUUID()}`;
    const env = fleet([{ name: 'r', service: 'RECORDER', model: 'stories260k' }], {
      RECORDER: recordingUpstream(' ok'),
      RATE_LIMITER: testBinding('TEST_RATE_LIMITER'),
      API_KEYS: keys(carol),
    });
    const key = as(carol);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await postJson(gateway, env, '/v1/completions', request, key)).status);
    expect(statuses).toEqual([200, 200, 429]);
  });

  it('caps concurrent streams per key until one ends or its client leaves', async () => {
    const env = fleet([{ name: 'node', url: nodeServerUrl, model: 'stories260k' }], { MAX_CONCURRENT_REQUESTS_PER_KEY: '1', API_KEYS: keys('dave', 'erin') });
    const long = { model: 'stories260k', prompt: golden.prompt, max_tokens: 400, ignore_eos: true, stream: true };
    const first = await postJson(gateway, env, '/v1/completions', long, as('dave'));
    const reader = first.body!.getReader();
    await reader.read();
    const second = await postJson(gateway, env, '/v1/completions', { ...long, max_tokens: 2 }, as('dave'));
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('1');
    expect((await postJson(gateway, env, '/v1/completions', { ...long, max_tokens: 2 }, as('erin'))).status).toBe(200);
    await reader.cancel();
    const third = await postJson(gateway, env, '/v1/completions', { ...long, max_tokens: 2 }, as('dave'));
    expect(third.status).toBe(200);
    expect((await ssePayloads(third)).at(-1)).toBe('[DONE]');
  });

  it('caps through one Durable Object per key when CONCURRENCY_LIMITER is bound', async () => {
    // The namespace's part the gateway uses, over the KeyLeases each KeyConcurrency object holds
    // (workerd builds Durable Objects only from a binding; RPC calls become plain calls).
    const objects = new Map<string, KeyLeases>();
    const namespace = {
      idFromName: (name: string) => name,
      get: (id: string) => {
        if (!objects.has(id)) objects.set(id, new KeyLeases());
        return objects.get(id)!;
      },
    };
    const env = fleet([{ name: 'node', url: nodeServerUrl, model: 'stories260k' }], {
      MAX_CONCURRENT_REQUESTS_PER_KEY: '1',
      CONCURRENCY_LIMITER: namespace,
      API_KEYS: JSON.stringify([{ name: 'frank', key: 'sk-frank-secret' }]),
    });
    const long = { model: 'stories260k', prompt: golden.prompt, max_tokens: 400, ignore_eos: true, stream: true };
    const first = await postJson(gateway, env, '/v1/completions', long, as('sk-frank-secret'));
    const reader = first.body!.getReader();
    await reader.read();
    expect((await postJson(gateway, env, '/v1/completions', long, as('sk-frank-secret'))).status).toBe(429);
    expect(objects.size).toBe(1);
    // One object per key, named by the key's name, never by the key.
    expect([...objects.keys()]).toEqual(['key:frank']);
    await reader.cancel();
    await new Promise((resolve) => setTimeout(resolve, 10));
    const again = await postJson(gateway, env, '/v1/completions', { ...long, max_tokens: 2 }, as('sk-frank-secret'));
    expect(again.status).toBe(200);
    await again.text();
  });
});
