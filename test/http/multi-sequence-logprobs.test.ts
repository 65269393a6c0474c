import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine, GenerationDelta } from '../../src/engine/types.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import { MODEL, expectError, golden, loadEngine, postJson, ssePayloads, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: Array<number | null>;
  top_logprobs: Array<Record<string, number> | null>;
  text_offset: number[];
}

async function json(path: string, body: object) {
  const response = await postJson(testApp(engine), path, body);
  expect(response.status).toBe(200);
  return response.json();
}

async function chunks(path: string, body: object) {
  const response = await postJson(testApp(engine), path, { ...body, stream: true });
  expect(response.status).toBe(200);
  const payloads = ssePayloads(await response.text());
  expect(payloads.at(-1)).toBe('[DONE]');
  return payloads.slice(0, -1).map((p) => JSON.parse(p));
}

/** The engine's own deltas for the same request, to check what the API reports against. */
async function engineDeltas(seed: bigint, logprobs: number, maxTokens: number): Promise<GenerationDelta[]> {
  const deltas: GenerationDelta[] = [];
  const params = defaultSamplingParams({ temperature: 1, seed, maxTokens, logprobs, ignoreEos: true });
  for await (const delta of engine.generate({ promptTokenIds: golden.prompt_ids, params })) deltas.push(delta);
  return deltas;
}

const decodeAfterPrompt = (ids: number[]) =>
  engine.tokenizer.decode([...golden.prompt_ids, ...ids]).slice(engine.tokenizer.decode(golden.prompt_ids).length);

describe('/v1/completions logprobs', () => {
  const body = { model: MODEL, prompt: golden.prompt, temperature: 1, seed: 8, max_tokens: 10, ignore_eos: true, logprobs: 3 };

  it("reports vLLM's logprobs object: tokens, offsets, the chosen token's logprob and the best alternatives", async () => {
    const response = await json('/v1/completions', body);
    const choice = response.choices[0];
    const logprobs: CompletionLogprobs = choice.logprobs;
    const deltas = await engineDeltas(8n, 3, 10);
    const ids = deltas.flatMap((d) => d.tokenIds);
    expect(logprobs.tokens).toHaveLength(10);
    expect(logprobs.tokens.join('')).toBe(choice.text);
    logprobs.tokens.forEach((token, i) => expect(token).toBe(decodeAfterPrompt(ids.slice(0, i + 1)).slice(decodeAfterPrompt(ids.slice(0, i)).length)));
    expect(logprobs.text_offset).toEqual(logprobs.tokens.map((_, i) => logprobs.tokens.slice(0, i).join('').length));
    deltas.forEach((delta, i) => {
      expect(logprobs.token_logprobs[i]).toBeCloseTo(delta.logprobs[0], 6);
      const dict = logprobs.top_logprobs[i]!;
      // The chosen token and the three best: four entries, or three when it is among them.
      const best = delta.topLogprobs![0];
      expect(Object.keys(dict)).toHaveLength(best.some((t) => t.tokenId === delta.tokenIds[0]) ? 3 : 4);
      expect(dict[logprobs.tokens[i]]).toBeCloseTo(delta.logprobs[0], 6);
      for (const alternative of best) expect(Object.values(dict).some((v) => Math.abs(v - alternative.logprob) < 1e-6)).toBe(true);
    });
    expect(choice.prompt_logprobs).toBeNull();
  });

  it('streams the same logprobs, chunk by chunk', async () => {
    const whole: CompletionLogprobs = (await json('/v1/completions', body)).choices[0].logprobs;
    const streamed = await chunks('/v1/completions', body);
    const merged: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
    for (const chunk of streamed) {
      const part: CompletionLogprobs = chunk.choices[0].logprobs;
      merged.tokens.push(...part.tokens);
      merged.token_logprobs.push(...part.token_logprobs);
      merged.top_logprobs.push(...part.top_logprobs);
      merged.text_offset.push(...part.text_offset);
    }
    expect(merged).toEqual(whole);
  });

  it('echo puts the prompt first, its first token without a logprob, and fills prompt_logprobs', async () => {
    const response = await json('/v1/completions', { ...body, echo: true, max_tokens: 3 });
    const choice = response.choices[0];
    expect(choice.text.startsWith(golden.prompt)).toBe(true);
    const logprobs: CompletionLogprobs = choice.logprobs;
    const promptLength = golden.prompt_ids.length;
    expect(logprobs.tokens).toHaveLength(promptLength + 3);
    expect(logprobs.token_logprobs[0]).toBeNull();
    expect(logprobs.top_logprobs[0]).toBeNull();
    expect(logprobs.token_logprobs.slice(1).every((v) => typeof v === 'number' && v <= 0)).toBe(true);
    expect(choice.prompt_logprobs).toHaveLength(promptLength);
    expect(choice.prompt_logprobs[0]).toBeNull();
    const second = choice.prompt_logprobs[1];
    const entry = second[String(golden.prompt_ids[1])];
    expect(entry.logprob).toBeCloseTo(logprobs.token_logprobs[1]!, 6);
    expect(entry.rank).toBeGreaterThanOrEqual(1);
    expect(entry.decoded_token).toBe(logprobs.tokens[1]);
    // Streaming: the prompt comes with each choice's first chunk.
    const streamed = await chunks('/v1/completions', { ...body, echo: true, max_tokens: 3 });
    expect(streamed[0].choices[0].text.startsWith(golden.prompt)).toBe(true);
    expect(streamed[0].choices[0].logprobs.tokens).toHaveLength(promptLength + 1);
    expect(streamed.map((c) => c.choices[0].text).join('')).toBe(choice.text);
  });

  it('reports prompt_logprobs on its own, and caps alternatives at 20', async () => {
    const response = await json('/v1/completions', { ...body, logprobs: undefined, prompt_logprobs: 2 });
    const prompt = response.choices[0].prompt_logprobs;
    expect(prompt[0]).toBeNull();
    for (const position of prompt.slice(1)) {
      const entries = Object.values(position) as Array<{ rank: number }>;
      expect(entries.length).toBeGreaterThanOrEqual(2);
      expect(entries.length).toBeLessThanOrEqual(3);
    }
    expect(response.choices[0].logprobs).toBeNull();
    const message = await expectError(postJson(testApp(engine), '/v1/completions', { ...body, logprobs: 21 }), 400, 'BadRequestError', 'logprobs');
    expect(message).toBe('Cannot request more than 20 logprobs.');
  });
});

describe('/v1/chat/completions logprobs', () => {
  const body = { model: MODEL, messages: [{ role: 'user', content: golden.prompt }], temperature: 0, max_tokens: 8, ignore_eos: true };

  it('reports content entries with bytes and the best alternatives, streaming or not', async () => {
    const response = await json('/v1/chat/completions', { ...body, logprobs: true, top_logprobs: 2 });
    const choice = response.choices[0];
    const content = choice.logprobs.content as Array<{ token: string; logprob: number; bytes: number[]; top_logprobs: Array<{ token: string; logprob: number; bytes: number[] }> }>;
    expect(content).toHaveLength(response.usage.completion_tokens);
    expect(content.map((c) => c.token).join('')).toBe(choice.message.content);
    for (const entry of content) {
      expect(entry.bytes).toEqual([...new TextEncoder().encode(entry.token)]);
      expect(entry.top_logprobs).toHaveLength(2);
      expect(entry.top_logprobs[0].logprob).toBeGreaterThanOrEqual(entry.top_logprobs[1].logprob);
      // Greedy: the chosen token is the best one.
      expect(entry.top_logprobs[0].token).toBe(entry.token);
      expect(entry.top_logprobs[0].logprob).toBeCloseTo(entry.logprob, 6);
    }
    const streamed = await chunks('/v1/chat/completions', { ...body, logprobs: true, top_logprobs: 2 });
    const streamedContent = streamed.flatMap((c) => c.choices.flatMap((choice: { logprobs: { content: unknown[] } | null }) => choice.logprobs?.content ?? []));
    expect(streamedContent).toEqual(content);
  });

  it('logprobs alone reports the chosen tokens with no alternatives; without it, null', async () => {
    const response = await json('/v1/chat/completions', { ...body, logprobs: true });
    expect(response.choices[0].logprobs.content.every((c: { top_logprobs: unknown[] }) => c.top_logprobs.length === 0)).toBe(true);
    expect((await json('/v1/chat/completions', body)).choices[0].logprobs).toBeNull();
    await expectError(
      postJson(testApp(engine), '/v1/chat/completions', { ...body, logprobs: true, top_logprobs: 21 }),
      400,
      'BadRequestError',
      'top_logprobs',
    );
  });

  it('reports prompt_logprobs at the top level', async () => {
    const response = await json('/v1/chat/completions', { ...body, prompt_logprobs: 1 });
    expect(response.prompt_logprobs[0]).toBeNull();
    expect(response.prompt_logprobs.length).toBe(response.usage.prompt_tokens);
  });
});
