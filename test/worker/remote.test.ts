/**
 * Delegation: the gateway Worker in workerd validates, tokenizes and streams, while the
 * real Node server (global-setup.ts, reached over loopback or through a service binding)
 * runs the model. Reference: test/fixtures/golden-greedy.json, which the Node engine
 * reproduces.
 */
import { describe, expect, inject, it, vi } from 'vitest';
import gateway from '../../src/runtime/worker/gateway.js';
import golden from '../fixtures/golden-greedy.json';
import { postJson, recordingUpstream, ssePayloads, testBinding, workerEnv } from './helpers.js';

const nodeServerUrl = inject('nodeServerUrl');
const viaUrl = workerEnv({ UPSTREAM_URL: nodeServerUrl });

interface UpstreamStats {
  steps: number;
  running: number;
  generatedTokens: number;
}

async function upstreamStats(): Promise<UpstreamStats> {
  return (await (await fetch(`${nodeServerUrl}/__test/stats`)).json()) as UpstreamStats;
}

interface CompletionChunk {
  choices: { text: string; finish_reason: string | null }[];
  usage: { prompt_tokens: number; completion_tokens: number } | null;
}

describe('the gateway Worker delegating to the Node server', () => {
  it('streams /generate with the golden greedy text', async () => {
    const response = await postJson(gateway, viaUrl, '/generate', {
      prompt: golden.prompt,
      max_tokens: golden.completion_ids.length,
      temperature: 0,
      stream: true,
    });
    expect(response.status).toBe(200);
    const payloads = await ssePayloads(response);
    expect(payloads.map((p) => (JSON.parse(p) as { text: string[] }).text[0]).join('')).toBe(golden.completion_text);
    expect(payloads.length).toBeGreaterThan(golden.completion_ids.length * 0.9);
  });

  it('relays /v1/completions chunk by chunk, with the usage the upstream counted', async () => {
    const response = await postJson(gateway, viaUrl, '/v1/completions', {
      model: 'stories260k',
      prompt: golden.prompt,
      max_tokens: golden.completion_ids.length,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    const payloads = await ssePayloads(response);
    expect(payloads.at(-1)).toBe('[DONE]');
    const chunks = payloads.slice(0, -1).map((p) => JSON.parse(p) as CompletionChunk);
    const textChunks = chunks.filter((c) => c.choices.length > 0);
    expect(textChunks.map((c) => c.choices[0].text).join('')).toBe(golden.completion_text);
    expect(textChunks.length).toBe(golden.completion_ids.length);
    expect(textChunks.at(-1)!.choices[0].finish_reason).toBe('length');
    expect(chunks.at(-1)!.usage).toMatchObject({
      prompt_tokens: golden.prompt_ids.length,
      completion_tokens: golden.completion_ids.length,
    });
  });

  it('streams /v1/chat/completions with the reply the Node server gives directly', async () => {
    const request = {
      model: 'stories260k',
      messages: [{ role: 'user', content: 'Tell me a story about a cat.' }],
      temperature: 0,
      max_tokens: 60,
    };
    const direct = await fetch(`${nodeServerUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    const expected = ((await direct.json()) as { choices: { message: { content: string } }[] }).choices[0].message.content;

    const response = await postJson(gateway, viaUrl, '/v1/chat/completions', { ...request, stream: true });
    const payloads = await ssePayloads(response);
    const chunks = payloads.slice(0, -1).map((p) => JSON.parse(p) as { choices: { delta: { content?: string } }[] });
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(content).toBe(expected);
    expect(content.length).toBeGreaterThan(20);
  });

  it('passes the stream through as it comes and cancels the upstream when the client leaves', async () => {
    const before = await upstreamStats();
    const maxTokens = 500;
    const response = await postJson(gateway, viaUrl, '/generate', {
      prompt: golden.prompt,
      max_tokens: maxTokens,
      ignore_eos: true,
      temperature: 0,
      stream: true,
    });
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toMatch(/^data: \{"text":\[/);
    await reader.cancel();

    let after = await upstreamStats();
    for (let i = 0; i < 100 && after.running > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await upstreamStats();
    }
    expect(after.running).toBe(0);
    // Had the gateway buffered the upstream's answer, or not cancelled it, all 500 would have been generated.
    expect(after.generatedTokens - before.generatedTokens).toBeLessThan(maxTokens);
  });

  it('refuses invalid requests at the edge, without calling the upstream', async () => {
    const upstream = recordingUpstream(' ok');
    const env = workerEnv({ UPSTREAM: upstream });
    const response = await postJson(gateway, env, '/v1/completions', { model: 'stories260k', prompt: 'Hi', temperature: -1 });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { param: string }).param).toBe('temperature');
    const tooLong = await postJson(gateway, env, '/v1/completions', { model: 'stories260k', prompt: 'Once upon a time '.repeat(200) });
    expect(tooLong.status).toBe(400);
    expect(((await tooLong.json()) as { message: string }).message).toMatch(/tokens/);
    const tokenized = await postJson(gateway, env, '/tokenize', { model: 'stories260k', prompt: golden.prompt });
    expect(((await tokenized.json()) as { tokens: number[] }).tokens).toEqual(golden.prompt_ids);
    expect(upstream.requests).toHaveLength(0);
    // The recorder does see requests that pass.
    expect((await postJson(gateway, env, '/v1/completions', { model: 'stories260k', prompt: 'Hi' })).status).toBe(200);
    expect(upstream.requests).toHaveLength(1);
  });

  it('reaches the upstream through a service binding, with its API key', async () => {
    const service = testBinding<{ fetch: typeof fetch }>('TEST_UPSTREAM_SERVICE');
    const apiKey = testBinding<string>('TEST_UPSTREAM_API_KEY');
    const request = { prompt: golden.prompt, max_tokens: 20, temperature: 0 };
    const expectedText = golden.prompt + golden.completion_text;

    const withKey = await postJson(gateway, workerEnv({ UPSTREAM: service, UPSTREAM_API_KEY: apiKey }), '/generate', request);
    expect(withKey.status).toBe(200);
    const text = ((await withKey.json()) as { text: string[] }).text[0];
    expect(expectedText.startsWith(text)).toBe(true);
    expect(text.length).toBeGreaterThan(golden.prompt.length + 20);

    const wrongKey = await postJson(gateway, workerEnv({ UPSTREAM: service, UPSTREAM_API_KEY: 'wrong' }), '/generate', request);
    expect(wrongKey.status).toBe(502);
    expect(((await wrongKey.json()) as { message: string }).message).toMatch(/refused this server's credentials \(HTTP 401\)/);
  });
});

describe('upstream failures in the API error shape', () => {
  it('reports an unreachable upstream and a model the upstream does not serve as gateway errors', async () => {
    const request = { model: 'stories260k', prompt: 'Hi', max_tokens: 5 };
    // Port 9 (discard) is closed on loopback.
    const unreachable = await postJson(gateway, workerEnv({ UPSTREAM_URL: 'http://127.0.0.1:9' }), '/v1/completions', request);
    expect(unreachable.status).toBe(502);
    expect(await unreachable.json()).toMatchObject({ object: 'error', type: 'BadGatewayError', code: 502 });

    const wrongModel = await postJson(gateway, workerEnv({ UPSTREAM_URL: nodeServerUrl, UPSTREAM_MODEL: 'llama-70b' }), '/v1/completions', request);
    expect(wrongModel.status).toBe(502);
    expect(((await wrongModel.json()) as { message: string }).message).toMatch(/HTTP 404.*llama-70b/);
  });

  it('will not start without an upstream', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const response = await gateway.fetch(new Request('http://worker.test/v1/models'), workerEnv());
    expect(response.status).toBe(500);
    expect(((await response.json()) as { message: string }).message).toMatch(/UPSTREAM_URL/);
    expect(error).toHaveBeenCalled();
    error.mockRestore();
  });
});
