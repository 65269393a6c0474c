import { describe, expect, it } from 'vitest';
import { translateRequest } from '../../src/gateway/dialects.js';
import { MemoryRateLimiter } from '../../src/gateway/edge-limits.js';
import { writeJson } from '../../src/gateway/json-text.js';
import { upstreamsFromEnv, upstreamUrl } from '../../src/gateway/upstreams.js';

const llama = { name: 'llama', dialect: 'llama.cpp' as const, upstreamModel: 'up', unsupported: new Set<string>() };

describe('translateRequest for llama.cpp', () => {
  it('turns vLLM guides into json_schema and a GBNF grammar, and fills vLLM sampling defaults', () => {
    const schema = { type: 'object' };
    expect(translateRequest({ model: 'm', prompt: 'x', guided_json: JSON.stringify(schema) }, 'completions', llama)).toEqual({
      model: 'up',
      prompt: 'x',
      json_schema: schema,
      temperature: 1,
      top_k: -1,
      top_p: 1,
      min_p: 0,
      repeat_penalty: 1,
      max_tokens: 16,
    });
    const choice = translateRequest({ model: 'm', prompt: 'x', guided_choice: ['a "b"', 'c'] }, 'completions', llama);
    expect(choice.grammar).toBe('root ::= "a \\"b\\"" | "c"');
    const format = translateRequest({ model: 'm', prompt: 'x', response_format: { type: 'json_schema', json_schema: { schema } } }, 'completions', llama);
    expect(format.json_schema).toEqual(schema);
    expect(format).not.toHaveProperty('response_format');
    // On chat llama.cpp reads response_format itself.
    const chat = translateRequest({ model: 'm', messages: [], response_format: { type: 'json_object' } }, 'chat', llama);
    expect(chat.response_format).toEqual({ type: 'json_object' });
    expect(translateRequest({ model: 'm', prompt: 'x', repetition_penalty: 1.3, temperature: 0 }, 'completions', llama)).toMatchObject({
      repeat_penalty: 1.3,
      temperature: 0,
    });
  });

  it('refuses what it would ignore, by field, and drops vLLM fields left at their neutral values', () => {
    for (const [field, value] of [['guided_regex', 'a'], ['use_beam_search', true], ['best_of', 3], ['min_tokens', 2], ['stop_token_ids', [5]], ['skip_special_tokens', false]] as const) {
      expect(() => translateRequest({ model: 'm', prompt: 'x', [field]: value }, 'completions', llama)).toThrow(expect.objectContaining({ param: field }));
    }
    const neutral = translateRequest({ model: 'm', prompt: 'x', best_of: 1, min_tokens: 0, stop_token_ids: [], skip_special_tokens: true, include_stop_str_in_output: false }, 'completions', llama);
    for (const field of ['best_of', 'min_tokens', 'stop_token_ids', 'skip_special_tokens', 'include_stop_str_in_output']) expect(neutral).not.toHaveProperty(field);
    // Passed as received: llama.cpp has them.
    const kept = translateRequest({ model: 'm', prompt: 'x', n: 2, logit_bias: { '5': -100 }, seed: 7, logprobs: 2, stop: ['.'], ignore_eos: true }, 'completions', llama);
    expect(kept).toMatchObject({ n: 2, logit_bias: { '5': -100 }, seed: 7, logprobs: 2, stop: ['.'], ignore_eos: true });
  });
});

describe('translateRequest for vLLM and configured refusals', () => {
  it('passes the request as received with the upstream model name, refusing configured fields', () => {
    const body = { model: 'm', prompt: 'x', guided_regex: 'a+', best_of: 4, tools: [] };
    expect(translateRequest(body, 'completions', { ...llama, dialect: 'vllm' })).toEqual({ ...body, model: 'up' });
    expect(() => translateRequest({ model: 'm', prompt: 'x', logit_bias: { '1': 2 } }, 'completions', { ...llama, dialect: 'vllm', unsupported: new Set(['logit_bias']) })).toThrow(
      expect.objectContaining({ param: 'logit_bias' }),
    );
  });
});

describe('translateRequest for the OpenAI API', () => {
  const openai = { ...llama, dialect: 'openai' as const };

  it("takes /generate's completions (vLLM fields at their neutral values) without vLLM's extras", () => {
    const remote = { model: 'm', prompt: [1, 2], stream: true, stream_options: { include_usage: true, continuous_usage_stats: true }, top_k: -1, min_p: 0, repetition_penalty: 1, min_tokens: 0, stop_token_ids: [], ignore_eos: false, skip_special_tokens: true, include_stop_str_in_output: false, temperature: 0 };
    expect(translateRequest(remote, 'completions', openai)).toEqual({ model: 'up', prompt: [1, 2], stream: true, stream_options: { include_usage: true }, temperature: 0 });
    expect(() => translateRequest({ ...remote, top_k: 40 }, 'completions', openai)).toThrow(expect.objectContaining({ param: 'top_k' }));
    expect(() => translateRequest({ model: 'm', prompt: 'x', guided_json: {} }, 'completions', openai)).toThrow(expect.objectContaining({ param: 'guided_json' }));
  });
});

describe('gateway helpers', () => {
  it('writes 64-bit integers digit for digit', () => {
    expect(writeJson({ seed: 9223372036854775807n, text: 'seed' })).toBe('{"seed":9223372036854775807,"text":"seed"}');
  });

  it('builds upstream URLs under a root or a /v1 base', () => {
    expect(upstreamUrl('http://h:8000', '/v1/completions')).toBe('http://h:8000/v1/completions');
    expect(upstreamUrl('http://h:8000/v1/', '/v1/completions')).toBe('http://h:8000/v1/completions');
    expect(upstreamUrl('http://h/llm/v1', '/health')).toBe('http://h/llm/health');
  });

  it('reads UPSTREAMS, with keys from named secrets, and refuses bad entries', () => {
    const [a, b] = upstreamsFromEnv(
      { UPSTREAMS: JSON.stringify([{ url: 'http://a', api_key_secret: 'A_KEY' }, { name: 'b', url: 'http://b', weight: 2, model: 'x', dialect: 'llama.cpp' }]), A_KEY: 'k' },
      'default',
    );
    expect(a).toMatchObject({ name: 'upstream-1', model: 'default', upstreamModel: 'default', apiKey: 'k', weight: 1, dialect: 'vllm' });
    expect(b).toMatchObject({ name: 'b', model: 'x', weight: 2, dialect: 'llama.cpp' });
    expect(() => upstreamsFromEnv({ UPSTREAMS: '[{"url":"http://a","dialect":"tgi"}]' }, 'd')).toThrow(/dialect/);
    expect(() => upstreamsFromEnv({ UPSTREAMS: '[{"url":"http://a","weight":0}]' }, 'd')).toThrow(/weight/);
    expect(upstreamsFromEnv({ UPSTREAM_URL: 'http://one', UPSTREAM_API_KEY: 's' }, 'd')[0]).toMatchObject({ url: 'http://one', apiKey: 's' });
    expect(upstreamsFromEnv({}, 'd')).toEqual([]);
  });

  it('rate-limits with a token bucket whose Retry-After is when the next request passes', async () => {
    let now = 0;
    const limiter = new MemoryRateLimiter(2, 60, () => now);
    expect(await limiter.limit('k')).toEqual({ allowed: true });
    expect(await limiter.limit('k')).toEqual({ allowed: true });
    expect(await limiter.limit('k')).toEqual({ allowed: false, retryAfterSeconds: 30 });
    expect(await limiter.limit('other')).toEqual({ allowed: true });
    now = 30_000;
    expect(await limiter.limit('k')).toEqual({ allowed: true });
  });
});
