/**
 * The gateway Worker in front of llama.cpp's server, an engine this project did not
 * write (test/worker/llama-server.ts starts it on the same stories260K weights, as GGUF),
 * and of the Node server: the same greedy text through the gateway as directly, streams
 * passed through, structured output translated into llama.cpp's vocabulary (or refused
 * by name), failover from an upstream that is down, /v1/models merged, and a client
 * disconnect that stops llama.cpp's generation.
 */
import { describe, expect, inject, it } from 'vitest';
import gateway from '../../src/runtime/worker/gateway.js';
import golden from '../fixtures/golden-greedy.json';
import { postJson, ssePayloads, workerEnv } from './helpers.js';

const nodeServerUrl = inject('nodeServerUrl');
const closedPortUrl = inject('closedPortUrl');

/** llama.cpp's URL; the tests that need it fail (never skip) when it could not start. */
function llamaServerUrl(): string {
  const url = inject('llamaServerUrl');
  if (url === '') throw new Error(inject('llamaServerError'));
  return url;
}

function llamaUpstream(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'llama', url: llamaServerUrl(), model: 'stories260k', dialect: 'llama.cpp', ...extra };
}

const llamaOnly = () => workerEnv({ UPSTREAMS: JSON.stringify([llamaUpstream()]) });

/**
 * fetch to llama.cpp directly. It closes a connection after each stream while saying
 * keep-alive, so a request on a reused connection may be lost before it is read: once
 * more on a fresh one (as the gateway does).
 */
async function llamaFetch(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch {
    return fetch(url, init);
  }
}

async function postDirect(url: string, path: string, body: unknown): Promise<Response> {
  return llamaFetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

interface Completion {
  choices: { text: string; finish_reason: string | null }[];
}

const greedy = { model: 'stories260k', prompt: golden.prompt, max_tokens: golden.completion_ids.length, temperature: 0 };

describe('the gateway in front of llama.cpp', () => {
  it('returns the greedy text llama.cpp gives directly, which is the reference text', async () => {
    const direct = (await (await postDirect(llamaServerUrl(), '/v1/completions', greedy)).json()) as Completion;
    const response = await postJson(gateway, llamaOnly(), '/v1/completions', greedy);
    expect(response.status).toBe(200);
    const viaGateway = (await response.json()) as Completion;
    expect(viaGateway.choices[0].text).toBe(direct.choices[0].text);
    expect(viaGateway.choices[0].text).toBe(golden.completion_text);
  });

  it('serves /generate through llama.cpp, which only speaks the OpenAI API', async () => {
    const response = await postJson(gateway, llamaOnly(), '/generate', {
      prompt: golden.prompt,
      max_tokens: golden.completion_ids.length,
      temperature: 0,
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { text: string[] }).text[0]).toBe(golden.prompt + golden.completion_text);
  });

  it('passes the stream through chunk by chunk', async () => {
    const response = await postJson(gateway, llamaOnly(), '/v1/completions', { ...greedy, stream: true });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const payloads = await ssePayloads(response);
    expect(payloads.at(-1)).toBe('[DONE]');
    const chunks = payloads.slice(0, -1).map((p) => JSON.parse(p) as Completion);
    expect(chunks.map((c) => c.choices[0]?.text ?? '').join('')).toBe(golden.completion_text);
    // llama.cpp sends a chunk per token: a buffered answer would have come as one.
    expect(chunks.length).toBeGreaterThan(golden.completion_ids.length * 0.9);
  });

  it('honours guided_json by handing llama.cpp the schema as json_schema', async () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer', minimum: 0, maximum: 120 } },
      required: ['name', 'age'],
      additionalProperties: false,
    };
    const request = { model: 'stories260k', prompt: 'Lily is', max_tokens: 80, temperature: 0, guided_json: schema };
    const response = await postJson(gateway, llamaOnly(), '/v1/completions', request);
    const answer = (await response.json()) as Completion;
    expect(answer).toHaveProperty('choices');
    const text = answer.choices[0].text;
    const value = JSON.parse(text) as { name: unknown; age: unknown };
    expect(Object.keys(value).sort()).toEqual(['age', 'name']);
    expect(typeof value.name).toBe('string');
    expect(Number.isInteger(value.age)).toBe(true);
    // Unconstrained, the same prompt is a story, not JSON.
    const free = await postJson(gateway, llamaOnly(), '/v1/completions', { ...request, guided_json: undefined });
    const freeText = ((await free.json()) as Completion).choices[0].text;
    expect(() => JSON.parse(freeText)).toThrow();
  });

  it('honours guided_choice as a llama.cpp grammar', async () => {
    const choice = await postJson(gateway, llamaOnly(), '/v1/completions', {
      model: 'stories260k',
      prompt: 'The cat was',
      max_tokens: 10,
      temperature: 0,
      guided_choice: ['happy', 'sad'],
    });
    expect(['happy', 'sad']).toContain(((await choice.json()) as Completion).choices[0].text);
  });

  it('refuses by name what llama.cpp cannot do, without a 500', async () => {
    for (const [field, value] of [
      ['guided_regex', '[a-z]+'],
      ['use_beam_search', true],
      ['min_tokens', 3],
    ] as const) {
      const response = await postJson(gateway, llamaOnly(), '/v1/completions', { ...greedy, [field]: value });
      expect(response.status).toBe(400);
      const body = (await response.json()) as { param: string; message: string };
      expect(body.param).toBe(field);
      expect(body.message).toMatch(/not supported by the upstream serving this model \(llama\)/);
    }
    // And what the upstream itself refuses comes back as its 400, not a gateway error.
    const refused = await postJson(gateway, llamaOnly(), '/v1/completions', { ...greedy, n: 5 });
    expect(refused.status).toBe(400);
  });

  it('fails over from an upstream that is down, before any byte reaches the client', async () => {
    // The down upstream has almost all the weight: it is tried first nearly always.
    const env = workerEnv({
      UPSTREAMS: JSON.stringify([{ name: 'down', url: closedPortUrl, model: 'stories260k', weight: 1000 }, llamaUpstream()]),
    });
    for (const stream of [false, true]) {
      const response = await postJson(gateway, env, '/v1/completions', { ...greedy, stream });
      expect(response.status).toBe(200);
      const text = stream
        ? (await ssePayloads(response)).slice(0, -1).map((p) => (JSON.parse(p) as Completion).choices[0]?.text ?? '').join('')
        : ((await response.json()) as Completion).choices[0].text;
      expect(text).toBe(golden.completion_text);
    }
    // With nothing up, the client gets a gateway error naming the upstreams, not their URLs.
    const allDown = workerEnv({ UPSTREAMS: JSON.stringify([{ name: 'down', url: closedPortUrl, model: 'stories260k' }]) });
    const failed = await postJson(gateway, allDown, '/v1/completions', greedy);
    expect(failed.status).toBe(502);
    const message = ((await failed.json()) as { message: string }).message;
    expect(message).toMatch(/down: cannot connect/);
    expect(message).not.toContain(closedPortUrl);
  });

  it('stops llama.cpp generating when the client disconnects', async () => {
    const url = llamaServerUrl();
    const predicted = async () => Number(/^llamacpp:tokens_predicted_total (\d+)/m.exec(await (await llamaFetch(`${url}/metrics`)).text())![1]);
    const busy = async () => ((await (await llamaFetch(`${url}/slots`)).json()) as { is_processing: boolean }[]).some((s) => s.is_processing);
    const before = await predicted();
    const maxTokens = 2000;
    const response = await postJson(gateway, llamaOnly(), '/v1/completions', {
      model: 'stories260k',
      prompt: golden.prompt,
      max_tokens: maxTokens,
      ignore_eos: true,
      temperature: 0,
      stream: true,
    });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toMatch(/^data: /);
    await reader.cancel();
    for (let i = 0; i < 200 && (await busy()); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await busy()).toBe(false);
    expect((await predicted()) - before).toBeLessThan(maxTokens);
  });
});

describe('a fleet of different engines', () => {
  it('routes by model and merges /v1/models', async () => {
    const env = workerEnv({
      UPSTREAMS: JSON.stringify([
        { name: 'node', url: nodeServerUrl, model: 'stories260k' },
        llamaUpstream({ model: 'stories260k-gguf', upstream_model: 'stories260k' }),
      ]),
    });
    const models = (await (await gateway.fetch(new Request('http://worker.test/v1/models'), env)).json()) as {
      data: { id: string; max_model_len?: number }[];
    };
    expect(models.data.map((m) => m.id)).toEqual(['stories260k', 'stories260k-gguf']);
    expect(models.data[0].max_model_len).toBe(512);
    expect(models.data[1].max_model_len).toBeGreaterThan(0);

    // Both engines, picked by model, give the reference greedy text.
    for (const model of ['stories260k', 'stories260k-gguf']) {
      const response = await postJson(gateway, env, '/v1/completions', { ...greedy, model });
      expect(((await response.json()) as Completion).choices[0].text).toBe(golden.completion_text);
    }
    const unknown = await postJson(gateway, env, '/v1/completions', { ...greedy, model: 'gpt-4' });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { param: string }).param).toBe('model');
  });
});

describe("llama.cpp's dialect, faithfully", () => {
  interface LegacyLogprobs {
    tokens: string[];
    token_logprobs: number[];
    top_logprobs: Record<string, number>[];
    text_offset: number[];
  }
  interface ChatShapedLogprobs {
    content: { token: string; logprob: number; top_logprobs: { token: string; logprob: number }[] }[];
  }
  const asked = { model: 'stories260k', prompt: golden.prompt, max_tokens: 6, temperature: 0, logprobs: 2 };

  it("returns completions logprobs in the OpenAI shape, with llama.cpp's own values", async () => {
    const direct = (await (await postDirect(llamaServerUrl(), '/v1/completions', asked)).json()) as { choices: { text: string; logprobs: ChatShapedLogprobs }[] };
    const reference = direct.choices[0].logprobs.content;
    const response = await postJson(gateway, llamaOnly(), '/v1/completions', asked);
    expect(response.status).toBe(200);
    const choice = ((await response.json()) as { choices: { text: string; logprobs: LegacyLogprobs }[] }).choices[0];
    expect(choice.logprobs.tokens).toEqual(reference.map((entry) => entry.token));
    expect(choice.logprobs.tokens.join('')).toBe(choice.text);
    expect(choice.logprobs.token_logprobs).toEqual(reference.map((entry) => entry.logprob));
    expect(choice.logprobs.top_logprobs).toEqual(reference.map((entry) => Object.fromEntries(entry.top_logprobs.map((t) => [t.token, t.logprob]))));
    expect(choice.logprobs.text_offset[0]).toBe(0);
    expect(choice.logprobs.text_offset.at(-1)).toBe(choice.text.length - reference.at(-1)!.token.length);
  });

  it('streams completions logprobs in the OpenAI shape, offsets running across events', async () => {
    const response = await postJson(gateway, llamaOnly(), '/v1/completions', { ...asked, stream: true });
    const payloads = await ssePayloads(response);
    expect(payloads.at(-1)).toBe('[DONE]');
    let text = '';
    for (const payload of payloads.slice(0, -1)) {
      const choice = (JSON.parse(payload) as { choices: { text: string; logprobs: LegacyLogprobs | null }[] }).choices[0];
      if (choice.logprobs !== null && choice.logprobs !== undefined) {
        expect(choice.logprobs.text_offset[0]).toBe(text.length);
        expect(choice.logprobs.tokens.join('')).toBe(choice.text);
        expect(Object.keys(choice.logprobs.top_logprobs[0])).toHaveLength(2);
      }
      text += choice.text;
    }
    expect(text.length).toBeGreaterThan(0);
  });

  it('refuses a required or named tool_choice by name (llama.cpp would answer 200 without a tool call), and passes auto', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const chat = { model: 'stories260k', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, max_tokens: 4, temperature: 0 };
    for (const toolChoice of ['required', { type: 'function', function: { name: 'get_weather' } }]) {
      const response = await postJson(gateway, llamaOnly(), '/v1/chat/completions', { ...chat, tool_choice: toolChoice });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ param: 'tool_choice', message: expect.stringMatching(/not supported by the upstream serving this model \(llama\)/) });
    }
    expect((await postJson(gateway, llamaOnly(), '/v1/chat/completions', { ...chat, tool_choice: 'auto' })).status).toBe(200);
  });

  it('refuses out-of-vocabulary logit_bias ids at the edge, which llama.cpp would ignore', async () => {
    const direct = await postDirect(llamaServerUrl(), '/v1/completions', { ...greedy, max_tokens: 2, logit_bias: { '100000': 5 } });
    expect(direct.status).toBe(200);
    await direct.text();
    const response = await postJson(gateway, llamaOnly(), '/v1/completions', { ...greedy, max_tokens: 2, logit_bias: { '100000': 5 } });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { param: string }).param).toBe('logit_bias');
  });

  it("counts llama.cpp's tokens and time to first byte in /metrics", async () => {
    const env = llamaOnly();
    const response = await postJson(gateway, env, '/v1/completions', { ...greedy, max_tokens: 7, stream: true });
    await response.text();
    const metrics = await (await gateway.fetch(new Request('http://worker.test/metrics'), env)).text();
    expect(metrics).toMatch(/^edge_llm_gateway_tokens_total\{upstream="llama",key="anonymous",kind="completion"\} 7$/m);
    expect(metrics).toMatch(/^edge_llm_gateway_requests_total\{route="\/v1\/completions",status="200",upstream="llama",key="anonymous"\} 1$/m);
    expect(metrics).toMatch(/^edge_llm_gateway_time_to_first_byte_seconds_count\{upstream="llama"\} 1$/m);
  });
});
