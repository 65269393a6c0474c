/**
 * The public-endpoint checks inside workerd: the API key (API_KEY, VLLM_API_KEY, and the
 * Worker's former API_TOKEN), JSON content type, allowed hosts, and /metrics per isolate.
 * The gateway Worker delegates to the real Node server (global-setup.ts).
 */
import { describe, expect, inject, it, vi } from 'vitest';
import gateway from '../../src/runtime/worker/gateway.js';
import golden from '../fixtures/golden-greedy.json';
import { postJson, workerEnv } from './helpers.js';

const nodeServerUrl = inject('nodeServerUrl');
const completion = { model: 'stories260k', prompt: golden.prompt, max_tokens: 4, temperature: 0 };

async function errorType(response: Response): Promise<string> {
  return ((await response.json()) as { type: string }).type;
}

describe('the Worker as a public endpoint', () => {
  it('requires API_KEY on the inference routes and leaves /health, /metrics and /version open', async () => {
    const env = workerEnv({ UPSTREAM_URL: nodeServerUrl, API_KEY: 'edge-key' });
    for (const [path, body] of [
      ['/v1/completions', completion],
      ['/generate', { prompt: golden.prompt, max_tokens: 2 }],
      ['/tokenize', { model: 'stories260k', prompt: 'Hi' }],
    ] as const) {
      const anonymous = await postJson(gateway, env, path, body);
      expect(anonymous.status, path).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
      expect(await errorType(anonymous)).toBe('UnauthorizedError');
      expect((await postJson(gateway, env, path, body, { authorization: 'Bearer edge-keY' })).status).toBe(401);
      expect((await postJson(gateway, env, path, body, { authorization: 'Bearer edge-key' })).status, path).toBe(200);
    }
    expect((await gateway.fetch(new Request('http://worker.test/v1/models'), env)).status).toBe(401);
    // However the path is spelled.
    for (const path of ['/%761/completions', '/%67enerate']) expect((await postJson(gateway, env, path, completion)).status, path).toBe(401);
    for (const open of ['/health', '/metrics', '/version']) {
      expect((await gateway.fetch(new Request(`http://worker.test${open}`), env)).status, open).toBe(200);
    }
  });

  it('takes the key from VLLM_API_KEY, and from API_TOKEN as before', async () => {
    for (const name of ['VLLM_API_KEY', 'API_TOKEN']) {
      const env = workerEnv({ UPSTREAM_URL: nodeServerUrl, [name]: 'k-123' });
      expect((await postJson(gateway, env, '/v1/completions', completion)).status, name).toBe(401);
      expect((await postJson(gateway, env, '/v1/completions', completion, { authorization: 'Bearer k-123' })).status, name).toBe(200);
    }
  });

  it('refuses bodies without a JSON content type (415) and hosts outside ALLOWED_HOSTS (403)', async () => {
    const env = workerEnv({ UPSTREAM_URL: nodeServerUrl, ALLOWED_HOSTS: 'llm.example.com, .internal.example' });
    const plain = await gateway.fetch(
      new Request('http://llm.example.com/v1/completions', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify(completion) }),
      env,
    );
    expect(plain.status).toBe(415);
    expect(await errorType(plain)).toBe('UnsupportedMediaTypeError');
    expect((await gateway.fetch(new Request('http://evil.example/health'), env)).status).toBe(403);
    expect((await gateway.fetch(new Request('http://api.internal.example/health'), env)).status).toBe(200);
  });

  it('keeps the reason a Worker could not start behind the key', async () => {
    // A gateway without an upstream cannot start: only a caller with the key learns why.
    const env = workerEnv({ API_KEY: 'edge-key' });
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const anonymous = await postJson(gateway, env, '/v1/completions', completion);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).not.toMatch(/upstream/i);
    const authorised = await postJson(gateway, env, '/v1/completions', completion, { authorization: 'Bearer edge-key' });
    expect(authorised.status).toBe(500);
    expect(((await authorised.json()) as { message: string }).message).toMatch(/no upstream/);
    logged.mockRestore();
  });

  it('counts the traffic the app serves in this isolate in /metrics under vLLM names', async () => {
    // The fleet gateway forwards /v1/completions and /v1/chat/completions itself, past the
    // app: /generate (and /tokenize) are what its metrics count.
    const env = workerEnv({ UPSTREAM_URL: nodeServerUrl });
    const generate = { prompt: golden.prompt, max_tokens: 4, temperature: 0 };
    for (let i = 0; i < 2; i++) expect((await postJson(gateway, env, '/generate', generate)).status).toBe(200);
    expect((await postJson(gateway, env, '/generate', { ...generate, max_tokens: 0 })).status).toBe(400);
    const text = await (await gateway.fetch(new Request('http://worker.test/metrics'), env)).text();
    const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(value('vllm:prompt_tokens_total{model_name="stories260k"}')).toBe(2 * golden.prompt_ids.length);
    expect(value('vllm:generation_tokens_total{model_name="stories260k"}')).toBe(8);
    expect(value('vllm:request_success_total{model_name="stories260k",finished_reason="length"}')).toBe(2);
    expect(value('vllm:e2e_request_latency_seconds_count{model_name="stories260k"}')).toBe(2);
    expect(value('edge_llm:requests_refused_total{model_name="stories260k",reason="invalid_request"}')).toBe(1);
  });
});
