/**
 * Prefix caching seen over HTTP: usage.prompt_tokens_details.cached_tokens as vLLM reports it
 * (only with enablePromptTokensDetails, and only when prompt tokens were reused), and the
 * metrics vLLM exposes for it: vllm:prefix_cache_queries / _hits, vllm:kv_cache_usage_perc,
 * vllm:request_queue_time_seconds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../src/config/server-config.js';
import { createApp, serverActivity } from '../../src/http/app.js';
import type { Engine } from '../../src/engine/types.js';
import { nodeGuideCompiler } from '../../src/runtime/node/guides.js';
import { MODEL, MODEL_DIR, loadEngine, postJson, ssePayloads } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

function app(settings: Record<string, unknown> = {}) {
  const config = parseServerConfig({ modelDir: MODEL_DIR, servedModelName: MODEL, logRequests: false, ...settings });
  const activity = serverActivity(engine, config);
  return createApp({ engine, config, guideCompiler: nodeGuideCompiler(engine), activity });
}

const STORY =
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her big red ball. ' +
  'One day, she saw a small bird sitting on a tree. The bird was sad because it could not fly.';

/** Prompt tokens (usage) and cached ones, of a non-streamed completion. */
async function complete(server: ReturnType<typeof app>, prompt: string, extra: Record<string, unknown> = {}) {
  const response = await postJson(server, '/v1/completions', { model: MODEL, prompt, max_tokens: 4, temperature: 0, ...extra });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { usage: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens: number } } };
  return body.usage;
}

function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    out.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return out;
}

async function scrape(server: ReturnType<typeof app>): Promise<Map<string, number>> {
  return samples(await (await server.request('/metrics')).text());
}

const label = `{model_name="${MODEL}"}`;

describe('usage.prompt_tokens_details', () => {
  it('reports the reused prompt tokens with enablePromptTokensDetails (every token the prompts share), and omits them when none were', async () => {
    const server = app({ enablePromptTokensDetails: true });
    const first = await complete(server, `${STORY} What did Lily do?`);
    expect(first.prompt_tokens).toBeGreaterThan(48);
    expect(first.prompt_tokens_details).toBeUndefined();
    const second = await complete(server, `${STORY} Where was the bird?`);
    // Token-exact reuse (as llama.cpp's prompt cache): the ids the two prompts start with, as /tokenize gives them.
    const ids = async (prompt: string) => ((await (await postJson(server, '/tokenize', { model: MODEL, prompt })).json()) as { tokens: number[] }).tokens;
    const [a, b] = [await ids(`${STORY} What did Lily do?`), await ids(`${STORY} Where was the bird?`)];
    let shared = 0;
    while (shared < b.length - 1 && a[shared] === b[shared]) shared++;
    expect(shared).toBeGreaterThan(32);
    expect(second.prompt_tokens_details!.cached_tokens).toBe(shared);
  });

  it('reports them on the streamed usage chunk and in chat completions', async () => {
    const server = app({ enablePromptTokensDetails: true });
    const messages = [{ role: 'user', content: `${STORY} Tell me more.` }];
    const body = { model: MODEL, messages, max_tokens: 3, temperature: 0, stream: true, stream_options: { include_usage: true } };
    await (await postJson(server, '/v1/chat/completions', body)).text();
    const raw = await (await postJson(server, '/v1/chat/completions', { ...body, messages: [{ role: 'user', content: `${STORY} Tell me why.` }] })).text();
    const payloads = ssePayloads(raw);
    const usage = (JSON.parse(payloads.at(-2)!) as { usage: { prompt_tokens_details?: { cached_tokens: number } } }).usage;
    expect(usage.prompt_tokens_details!.cached_tokens).toBeGreaterThanOrEqual(32);
  });

  it('is absent by default (vLLM without --enable-prompt-tokens-details), though the prompt was reused', async () => {
    const server = app();
    await complete(server, `${STORY} What is red?`);
    const before = await scrape(server);
    const usage = await complete(server, `${STORY} What is red?`);
    expect(usage.prompt_tokens_details).toBeUndefined();
    const after = await scrape(server);
    expect(after.get(`vllm:prefix_cache_hits_total${label}`)! - before.get(`vllm:prefix_cache_hits_total${label}`)!).toBeGreaterThanOrEqual(32);
  });
});

describe('prefix cache metrics', () => {
  it('counts queried and reused prompt tokens, the KV usage and the time in the queue', async () => {
    const server = app({ enablePromptTokensDetails: true });
    const before = await scrape(server);
    const first = await complete(server, `${STORY} The end?`);
    const second = await complete(server, `${STORY} The beginning?`);
    const after = await scrape(server);
    const delta = (name: string) => after.get(`${name}${label}`)! - (before.get(`${name}${label}`) ?? 0);
    expect(delta('vllm:prefix_cache_queries_total')).toBe(first.prompt_tokens + second.prompt_tokens);
    expect(delta('vllm:prefix_cache_hits_total')).toBe((first.prompt_tokens_details?.cached_tokens ?? 0) + second.prompt_tokens_details!.cached_tokens);
    const usage = after.get(`vllm:kv_cache_usage_perc${label}`)!;
    expect(usage).toBeGreaterThanOrEqual(0);
    expect(usage).toBeLessThanOrEqual(1);
    expect(delta('vllm:request_queue_time_seconds_count')).toBe(2);
  });

  it('counts nothing reused with enablePrefixCaching off', async () => {
    const plain = await loadEngineWithout();
    try {
      const config = parseServerConfig({ modelDir: MODEL_DIR, servedModelName: MODEL, logRequests: false, enablePromptTokensDetails: true });
      const server = createApp({ engine: plain, config, guideCompiler: nodeGuideCompiler(plain), activity: serverActivity(plain, config) });
      await complete(server, `${STORY} Again?`);
      const usage = await complete(server, `${STORY} Again?`);
      expect(usage.prompt_tokens_details).toBeUndefined();
      const values = await scrape(server);
      expect(values.get(`vllm:prefix_cache_hits_total${label}`)).toBe(0);
      expect(values.get(`vllm:prefix_cache_queries_total${label}`)).toBe(0);
    } finally {
      await plain.dispose();
    }
  });
});

async function loadEngineWithout(): Promise<Engine> {
  const { createNodeEngine } = await import('../../src/runtime/node/engine.js');
  return createNodeEngine({ modelDir: MODEL_DIR, servedModelName: MODEL, limits: { enablePrefixCaching: false } });
}
