/**
 * /v1 logprobs as current vLLM reports them (its --logprobs-mode, server setting
 * logprobsMode): by default the raw model distribution, whatever the sampling knobs;
 * processed_* the distribution the token was drawn from. Also top_k 0 as "disabled".
 * The arithmetic is checked against vLLM's figures in test/sampling/vllm-reference.test.ts;
 * this checks that the server setting reaches the sampler through both routes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerConfig, type ServerConfig } from '../../src/config/server-config.js';
import type { Engine } from '../../src/engine/types.js';
import { MODEL, golden, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const greedy = { model: MODEL, prompt: golden.prompt, temperature: 0, max_tokens: 1, logprobs: 5 };
const sampled = { ...greedy, temperature: 0.5, top_p: 0.5, seed: 11 };

async function firstStep(body: unknown, config: Partial<ServerConfig> = {}): Promise<{ token: string; logprob: number; top: Record<string, number> }> {
  const response = await postJson(testApp(engine, config), '/v1/completions', body);
  expect(response.status).toBe(200);
  const { logprobs } = (await response.json()).choices[0];
  return { token: logprobs.tokens[0], logprob: logprobs.token_logprobs[0], top: logprobs.top_logprobs[0] };
}

const ranked = (top: Record<string, number>) => Object.entries(top).sort((a, b) => b[1] - a[1]);

describe('logprobsMode', () => {
  it('defaults to raw_logprobs: temperature and top_p change the draw, not the reported distribution', async () => {
    const raw = await firstStep(greedy);
    const atHalf = await firstStep(sampled);
    expect(atHalf.top).toEqual(raw.top);
    expect(Object.keys(atHalf.top)).toHaveLength(5);
    expect(atHalf.logprob).toBe(raw.top[atHalf.token]);
  });

  it('processed_logprobs reports the distribution the token was drawn from (vLLM 0.6)', async () => {
    const raw = await firstStep(greedy);
    const processed = await firstStep(sampled, { logprobsMode: 'processed_logprobs' });
    // Temperature 0.5 squares the odds and top_p 0.5 keeps the head whose mass reaches one half.
    const kept = ranked(processed.top);
    const rawRanked = ranked(raw.top);
    expect(kept.map(([text]) => text)).toEqual(rawRanked.slice(0, kept.length).map(([text]) => text));
    const total = kept.reduce((sum, [, logprob]) => sum + Math.exp(logprob), 0);
    expect(total).toBeCloseTo(1, 5);
    // Within the kept head, log-odds double at temperature 0.5.
    if (kept.length > 1) expect(kept[0]![1] - kept[1]![1]).toBeCloseTo(2 * (rawRanked[0]![1] - rawRanked[1]![1]), 3);
    else expect(kept[0]![1]).toBe(0);
  });

  it('raw_logits reports the model\'s scores: the same ranking, logprob differences unchanged', async () => {
    const raw = ranked((await firstStep(greedy)).top);
    const logits = ranked((await firstStep(sampled, { logprobsMode: 'raw_logits' })).top);
    expect(logits.map(([text]) => text)).toEqual(raw.map(([text]) => text));
    for (let i = 1; i < raw.length; i++) expect(logits[0]![1] - logits[i]![1]).toBeCloseTo(raw[0]![1] - raw[i]![1], 4);
    // Scores, not logprobs: they are not normalised.
    expect(logits.reduce((sum, [, value]) => sum + Math.exp(value), 0)).not.toBeCloseTo(raw.reduce((sum, [, value]) => sum + Math.exp(value), 0), 2);
  });

  it('reaches /v1/chat/completions too', async () => {
    const chat = { model: MODEL, messages: [{ role: 'user', content: golden.prompt }], max_tokens: 1, logprobs: true, top_logprobs: 5 };
    const tops = async (body: object, config: Partial<ServerConfig> = {}) => {
      const response = await postJson(testApp(engine, config), '/v1/chat/completions', body);
      expect(response.status).toBe(200);
      return (await response.json()).choices[0].logprobs.content[0].top_logprobs as Array<{ token: string; logprob: number }>;
    };
    const raw = await tops({ ...chat, temperature: 0 });
    expect(await tops({ ...chat, temperature: 0.5, top_p: 0.5, seed: 3 })).toEqual(raw);
    const processed = await tops({ ...chat, temperature: 0.5, top_p: 0.5, seed: 3 }, { logprobsMode: 'processed_logprobs' });
    expect(processed).not.toEqual(raw);
  });

  it('is a checked setting (LOGPROBS_MODE in the environment)', () => {
    expect(parseServerConfig({}).logprobsMode).toBe('raw_logprobs');
    expect(() => parseServerConfig({ logprobsMode: 'processed' })).toThrow(/logprobsMode must be one of "raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits"/);
  });
});

describe('top_k', () => {
  it('0 means disabled, as current vLLM (its default): the same draws as -1', async () => {
    const app = testApp(engine);
    const body = { model: MODEL, prompt: golden.prompt, temperature: 1, max_tokens: 12, seed: 5 };
    const text = async (topK: number) => {
      const response = await postJson(app, '/v1/completions', { ...body, top_k: topK });
      expect(response.status).toBe(200);
      return (await response.json()).choices[0].text as string;
    };
    expect(await text(0)).toBe(await text(-1));
    expect((await postJson(app, '/v1/completions', { ...body, top_k: -2 })).status).toBe(400);
  });
});
