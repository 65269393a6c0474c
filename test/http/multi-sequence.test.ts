import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { MODEL, expectError, golden, loadEngine, postJson, ssePayloads, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const sampled = { temperature: 1, seed: 77, max_tokens: 12, ignore_eos: true };

async function json(path: string, body: object, config = {}) {
  const response = await postJson(testApp(engine, config), path, body);
  expect(response.status).toBe(200);
  return response.json();
}

async function stream(path: string, body: object, config = {}): Promise<string[]> {
  const response = await postJson(testApp(engine, config), path, { ...body, stream: true });
  expect(response.status).toBe(200);
  return ssePayloads(await response.text());
}

/** Per choice index: the concatenated field of all its chunks. */
function byIndex<T>(chunks: Array<{ choices: Array<{ index: number } & T> }>, pick: (choice: T) => string): string[] {
  const texts: string[] = [];
  for (const chunk of chunks) for (const choice of chunk.choices) texts[choice.index] = (texts[choice.index] ?? '') + pick(choice);
  return texts;
}

describe('/v1/completions with n > 1', () => {
  const body = { model: MODEL, prompt: golden.prompt, n: 3, ...sampled };

  it('returns n choices, counting every returned token in usage', async () => {
    const response = await json('/v1/completions', body);
    expect(response.choices.map((c: { index: number }) => c.index)).toEqual([0, 1, 2]);
    const texts = response.choices.map((c: { text: string }) => c.text);
    expect(new Set(texts).size).toBe(3);
    expect(response.choices.every((c: { finish_reason: string }) => c.finish_reason === 'length')).toBe(true);
    expect(response.usage).toEqual({ prompt_tokens: 5, completion_tokens: 36, total_tokens: 41 });
    // Same seed, same choices.
    expect((await json('/v1/completions', body)).choices).toEqual(response.choices);
  });

  it('streams chunks naming their choice, adding up to the same texts', async () => {
    const whole = await json('/v1/completions', body);
    const payloads = await stream('/v1/completions', { ...body, stream_options: { include_usage: true } });
    expect(payloads.at(-1)).toBe('[DONE]');
    const chunks = payloads.slice(0, -1).map((p) => JSON.parse(p));
    const usage = chunks.at(-1);
    expect(usage.choices).toEqual([]);
    expect(usage.usage.completion_tokens).toBe(36);
    const content = chunks.slice(0, -1);
    expect(content).toHaveLength(36);
    expect(byIndex<{ text: string }>(content, (c) => c.text)).toEqual(whole.choices.map((c: { text: string }) => c.text));
    for (const index of [0, 1, 2]) {
      const finishes = content.flatMap((chunk: { choices: Array<{ index: number; finish_reason: string | null }> }) =>
        chunk.choices.filter((c) => c.index === index && c.finish_reason !== null),
      );
      expect(finishes).toHaveLength(1);
    }
  });

  it('with best_of > n returns n choices, and refuses to stream them', async () => {
    const response = await json('/v1/completions', { ...body, n: 2, best_of: 4 });
    expect(response.choices.map((c: { index: number }) => c.index)).toEqual([0, 1]);
    expect(response.usage.completion_tokens).toBe(24);
    const message = await expectError(
      postJson(testApp(engine), '/v1/completions', { ...body, n: 2, best_of: 4, stream: true }),
      400,
      'BadRequestError',
      'best_of',
    );
    expect(message).toMatch(/best_of must equal n when streaming/);
  });

  it('runs beam search: n distinct beams, greedy-compatible, not streamed', async () => {
    const beam = { model: MODEL, prompt: golden.prompt, n: 2, use_beam_search: true, temperature: 0, max_tokens: 8 };
    const response = await json('/v1/completions', beam);
    expect(response.choices).toHaveLength(2);
    expect(response.choices[0].text).not.toBe(response.choices[1].text);
    expect(response.choices.every((c: { finish_reason: string }) => c.finish_reason === 'length')).toBe(true);
    await expectError(postJson(testApp(engine), '/v1/completions', { ...beam, stream: true }), 400, 'BadRequestError', 'use_beam_search');
  });
});

describe('structured output with n > 1', () => {
  it('constrains every choice with its own grammar state', async () => {
    const options = ['a cat', 'a dog', 'the sun'];
    const response = await json('/v1/completions', { model: MODEL, prompt: golden.prompt, n: 4, temperature: 1, seed: 2, max_tokens: 20, guided_choice: options });
    expect(response.choices).toHaveLength(4);
    for (const choice of response.choices) expect(options).toContain(choice.text);
  });
});

describe('/v1/chat/completions with n > 1', () => {
  const body = { model: MODEL, messages: [{ role: 'user', content: golden.prompt }], n: 2, ...sampled };

  it('returns n messages, and streams each choice with its own role chunk', async () => {
    const whole = await json('/v1/chat/completions', body);
    expect(whole.choices.map((c: { index: number; message: { role: string } }) => [c.index, c.message.role])).toEqual([
      [0, 'assistant'],
      [1, 'assistant'],
    ]);
    const payloads = await stream('/v1/chat/completions', body);
    const chunks = payloads.slice(0, -1).map((p) => JSON.parse(p));
    expect(chunks.slice(0, 2).map((c) => c.choices)).toEqual([
      [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
      [{ index: 1, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    ]);
    const contents = byIndex<{ delta: { content?: string } }>(chunks, (c) => c.delta.content ?? '');
    expect(contents).toEqual(whole.choices.map((c: { message: { content: string } }) => c.message.content));
  });
});

describe('/generate with n > 1', () => {
  const body = { prompt: golden.prompt, n: 2, best_of: 2, temperature: 0.9, seed: 5, max_tokens: 10, ignore_eos: true };

  it('returns one text per sequence, each the prompt followed by its continuation', async () => {
    const response = await json('/generate', body);
    expect(response.text).toHaveLength(2);
    for (const text of response.text) expect(text.startsWith(golden.prompt)).toBe(true);
    expect(response.text[0]).not.toBe(response.text[1]);
  });

  it('streams one entry per sequence per step, and full texts with fullTextEnabled', async () => {
    const whole = (await json('/generate', body)).text.map((text: string) => text.slice(golden.prompt.length));
    const events = (await stream('/generate', body)).map((p) => JSON.parse(p).text as string[]);
    expect(events.every((texts) => texts.length === 2)).toBe(true);
    expect([0, 1].map((i) => events.map((texts) => texts[i]).join(''))).toEqual(whole);
    // At most one event per step: never more events than tokens per sequence.
    expect(events.length).toBeLessThanOrEqual(10);
    const full = (await stream('/generate', body, { fullTextEnabled: true })).map((p) => JSON.parse(p).text as string[]);
    expect(full.at(-1)).toEqual(whole);
    for (let i = 1; i < full.length; i++) {
      full[i].forEach((text, j) => expect(text.startsWith(full[i - 1][j])).toBe(true));
    }
  });

  it('returns the best n of best_of sequences, one of the candidates', async () => {
    // The same seed gives the same candidates whatever n: best_of = 3 picks among n = 3's texts.
    const candidates = (await json('/generate', { ...body, n: 3, best_of: 3 })).text;
    const response = await json('/generate', { ...body, n: 1, best_of: 3 });
    expect(response.text).toHaveLength(1);
    expect(candidates).toContain(response.text[0]);
  });
});

describe('an engine that serves one sequence per request', () => {
  it('refuses what it does not declare instead of dropping it', async () => {
    // A delegate without EngineFeatures, like the remote engine today.
    const bare: Engine = {
      info: engine.info,
      tokenizer: engine.tokenizer,
      generationDefaults: engine.generationDefaults,
      generate: (request) => engine.generate(request),
      stats: () => engine.stats(),
      dispose: async () => {},
    };
    const body = { model: MODEL, prompt: golden.prompt, max_tokens: 2 };
    const cases: Array<[object, string]> = [
      [{ n: 2, temperature: 1 }, 'n'],
      [{ best_of: 2, temperature: 1 }, 'best_of'],
      [{ n: 2, use_beam_search: true, temperature: 0 }, 'use_beam_search'],
      [{ logprobs: 1 }, 'logprobs'],
      [{ prompt_logprobs: 1 }, 'prompt_logprobs'],
    ];
    for (const [extra, param] of cases) {
      const message = await expectError(postJson(testApp(bare), '/v1/completions', { ...body, ...extra }), 400, 'BadRequestError', param);
      expect(message).toMatch(/not supported by this server's engine/);
    }
    const plain = await postJson(testApp(bare), '/v1/completions', body);
    expect(plain.status).toBe(200);
  });
});
