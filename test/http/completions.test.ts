import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { MODEL, expectError, golden, loadEngine, postJson, ssePayloads, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const greedy = { model: MODEL, prompt: golden.prompt, temperature: 0, max_tokens: 100 };

interface Chunk {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: Array<{ index: number; text: string; logprobs: null; finish_reason: string | null; stop_reason: string | number | null }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}

async function streamChunks(body: object, config = {}): Promise<{ chunks: Chunk[]; done: boolean }> {
  const response = await postJson(testApp(engine, config), '/v1/completions', { ...body, stream: true });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const payloads = ssePayloads(await response.text());
  const done = payloads.at(-1) === '[DONE]';
  expect(payloads.indexOf('[DONE]')).toBe(payloads.length - 1);
  return { chunks: payloads.slice(0, -1).map((payload) => JSON.parse(payload) as Chunk), done };
}

describe('POST /v1/completions, non-streaming', () => {
  it('reproduces the golden greedy continuation in vLLM\'s response shape', async () => {
    const response = await postJson(testApp(engine), '/v1/completions', greedy);
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toEqual({
      id: expect.stringMatching(/^cmpl-[0-9a-f]+$/),
      object: 'text_completion',
      created: expect.any(Number),
      model: MODEL,
      choices: [
        {
          index: 0,
          text: golden.completion_text,
          logprobs: null,
          finish_reason: 'length',
          stop_reason: null,
          prompt_logprobs: null,
        },
      ],
      usage: { prompt_tokens: golden.prompt_ids.length, completion_tokens: 100, total_tokens: golden.prompt_ids.length + 100 },
    });
    expect(Math.abs(body.created - Date.now() / 1000)).toBeLessThan(60);
  });

  it('accepts a prompt given as token ids', async () => {
    const response = await postJson(testApp(engine), '/v1/completions', { ...greedy, prompt: golden.prompt_ids, max_tokens: 10 });
    const body = await response.json();
    expect(golden.completion_text.startsWith(body.choices[0].text)).toBe(true);
    expect(body.usage.completion_tokens).toBe(10);
  });

  it('reports a stop string and its stop_reason', async () => {
    const body = await (await postJson(testApp(engine), '/v1/completions', { ...greedy, stop: [' girl', 'zzz'] })).json();
    expect(body.choices[0]).toMatchObject({ text: ', there was a little', finish_reason: 'stop', stop_reason: ' girl' });
  });

  it('reports a stop token id as the stop_reason', async () => {
    // The fourth golden token: greedy generation reaches it at step 4 and stops there.
    const stopId = golden.completion_ids[3]!;
    const body = await (await postJson(testApp(engine), '/v1/completions', { ...greedy, stop_token_ids: [stopId] })).json();
    expect(body.choices[0].finish_reason).toBe('stop');
    expect(body.choices[0].stop_reason).toBe(stopId);
    expect(body.usage.completion_tokens).toBe(4);
  });

  it('uses the X-Request-Id header in the response id', async () => {
    const response = await postJson(testApp(engine), '/v1/completions', { ...greedy, max_tokens: 1 }, {
      headers: { 'content-type': 'application/json', 'x-request-id': 'abc123' },
    });
    expect((await response.json()).id).toBe('cmpl-abc123');
  });
});

describe('POST /v1/completions, streaming', () => {
  it('streams vLLM chunks whose texts add up to the golden continuation, then [DONE]', async () => {
    const { chunks, done } = await streamChunks(greedy);
    expect(done).toBe(true);
    expect(chunks).toHaveLength(100); // one per engine step
    const ids = new Set(chunks.map((chunk) => chunk.id));
    expect(ids.size).toBe(1);
    for (const chunk of chunks) {
      expect(Object.keys(chunk).sort()).toEqual(['choices', 'created', 'id', 'model', 'object', 'usage']);
      expect(chunk).toMatchObject({ object: 'text_completion', model: MODEL, usage: null });
      expect(chunk.choices).toHaveLength(1);
      expect(Object.keys(chunk.choices[0]!).sort()).toEqual(['finish_reason', 'index', 'logprobs', 'stop_reason', 'text']);
    }
    expect(chunks.map((chunk) => chunk.choices[0]!.text).join('')).toBe(golden.completion_text);
    expect(chunks.slice(0, -1).every((chunk) => chunk.choices[0]!.finish_reason === null)).toBe(true);
    expect(chunks.at(-1)!.choices[0]).toMatchObject({ finish_reason: 'length', stop_reason: null });
  });

  it('never streams part of a stop string, and ends with finish_reason "stop"', async () => {
    const { chunks } = await streamChunks({ ...greedy, stop: ' girl' });
    expect(chunks.map((chunk) => chunk.choices[0]!.text).join('')).toBe(', there was a little');
    expect(chunks.at(-1)!.choices[0]).toMatchObject({ finish_reason: 'stop', stop_reason: ' girl' });
  });

  it('adds a final usage chunk with no choices for include_usage', async () => {
    const { chunks } = await streamChunks({ ...greedy, max_tokens: 5, stream_options: { include_usage: true } });
    expect(chunks).toHaveLength(6);
    expect(chunks.slice(0, 5).every((chunk) => chunk.usage === null)).toBe(true);
    const last = chunks.at(-1)!;
    expect(Object.keys(last).sort()).toEqual(['choices', 'created', 'id', 'model', 'object', 'usage']);
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({ prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 });
  });

  it('puts usage so far on every chunk with continuous_usage_stats', async () => {
    const { chunks } = await streamChunks({
      ...greedy,
      max_tokens: 4,
      stream_options: { include_usage: true, continuous_usage_stats: true },
    });
    expect(chunks.map((chunk) => chunk.usage?.completion_tokens)).toEqual([1, 2, 3, 4, 4]);
    expect(chunks.every((chunk) => chunk.usage?.prompt_tokens === 5)).toBe(true);
  });

  it('refuses stream_options without stream', async () => {
    await expectError(
      postJson(testApp(engine), '/v1/completions', { ...greedy, stream_options: { include_usage: true } }),
      400,
      'BadRequestError',
      'stream_options',
    );
  });
});
