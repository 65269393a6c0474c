import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { MODEL, expectError, loadEngine, postJson, ssePayloads, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const PROMPTS = ['Once upon a time', 'Tom had a dog', 'The sun was'];
const complete = async (body: Record<string, unknown>) => {
  const response = await postJson(testApp(engine), '/v1/completions', { model: MODEL, max_tokens: 6, ...body });
  expect(response.status).toBe(200);
  return response.json();
};

describe('several prompts in one /v1/completions request', () => {
  it('answers each prompt as its own request would: choices in prompt order, usage summed', async () => {
    const batch = await complete({ prompt: PROMPTS, temperature: 0 });
    const solos = await Promise.all(PROMPTS.map((prompt) => complete({ prompt, temperature: 0 })));
    expect(batch.choices.map((choice: { index: number }) => choice.index)).toEqual([0, 1, 2]);
    expect(batch.choices.map((choice: { text: string }) => choice.text)).toEqual(solos.map((solo) => solo.choices[0].text));
    const sum = (key: string) => solos.reduce((total, solo) => total + solo.usage[key], 0);
    expect(batch.usage).toEqual({ prompt_tokens: sum('prompt_tokens'), completion_tokens: sum('completion_tokens'), total_tokens: sum('total_tokens') });
  });

  it('with n: prompt-major indices (prompt p, sequence i → p·n + i), each prompt\'s choices as its own seeded request', async () => {
    const batch = await complete({ prompt: PROMPTS.slice(0, 2), n: 2, temperature: 1, seed: 11 });
    expect(batch.choices.map((choice: { index: number }) => choice.index)).toEqual([0, 1, 2, 3]);
    for (const [p, prompt] of PROMPTS.slice(0, 2).entries()) {
      const solo = await complete({ prompt, n: 2, temperature: 1, seed: 11 });
      expect(batch.choices.slice(p * 2, p * 2 + 2).map((choice: { text: string }) => choice.text)).toEqual(solo.choices.map((choice: { text: string }) => choice.text));
    }
  });

  it('takes lists of token ids, and echoes each prompt before its own choices', async () => {
    const ids = PROMPTS.slice(0, 2).map((prompt) => engine.tokenizer.encode(prompt, { addSpecialTokens: true }));
    const fromIds = await complete({ prompt: ids, temperature: 0 });
    const fromText = await complete({ prompt: PROMPTS.slice(0, 2), temperature: 0 });
    expect(fromIds.choices.map((choice: { text: string }) => choice.text)).toEqual(fromText.choices.map((choice: { text: string }) => choice.text));
    const echoed = await complete({ prompt: PROMPTS.slice(0, 2), temperature: 0, echo: true });
    echoed.choices.forEach((choice: { text: string }, i: number) => expect(choice.text).toBe(PROMPTS[i] + fromText.choices[i].text));
  });

  it('streams: chunks of every prompt, each text adding up to the non-streamed one, usage summed at the end', async () => {
    const body = { model: MODEL, prompt: PROMPTS, temperature: 0, max_tokens: 6 };
    const whole = await complete(body);
    const response = await postJson(testApp(engine), '/v1/completions', { ...body, stream: true, stream_options: { include_usage: true } });
    const payloads = ssePayloads(await response.text());
    expect(payloads.at(-1)).toBe('[DONE]');
    const chunks = payloads.slice(0, -1).map((payload) => JSON.parse(payload));
    const texts = ['', '', ''];
    for (const chunk of chunks) for (const choice of chunk.choices) texts[choice.index] += choice.text;
    expect(texts).toEqual(whole.choices.map((choice: { text: string }) => choice.text));
    expect(chunks.at(-1).usage).toEqual(whole.usage);
  });

  it('refuses the request when one prompt is invalid, naming it', async () => {
    const vocab = engine.info.vocabSize;
    await expectError(postJson(testApp(engine), '/v1/completions', { model: MODEL, prompt: [[1, 2], [1, vocab]] }), 400, 'BadRequestError', 'prompt');
    const long = 'dog '.repeat(600);
    await expectError(postJson(testApp(engine), '/v1/completions', { model: MODEL, prompt: ['Hi', long] }), 400, 'BadRequestError', 'prompt[1]');
  });
});
