import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { golden } from '../http/helpers.js';
import { servedOpenAIClient } from './spawn-server.js';

const MODEL = 'stories260k';
const served = servedOpenAIClient();

describe('the official openai client: several choices and logprobs', () => {
  it('completions: n choices with logprobs, streaming adds up to the same', async () => {
    const params = { model: MODEL, prompt: golden.prompt, n: 3, temperature: 1, seed: 11, max_tokens: 8, logprobs: 2 };
    const completion = await served.client.completions.create(params);
    expect(completion.choices.map((choice) => choice.index)).toEqual([0, 1, 2]);
    for (const choice of completion.choices) {
      expect(choice.logprobs!.tokens!.join('')).toBe(choice.text);
      expect(choice.logprobs!.token_logprobs!.every((value) => value <= 0)).toBe(true);
      expect(choice.logprobs!.top_logprobs!.every((top) => Object.keys(top).length >= 2)).toBe(true);
    }
    expect(completion.usage!.completion_tokens).toBe(completion.choices.reduce((sum, c) => sum + c.logprobs!.tokens!.length, 0));

    const stream = await served.client.completions.create({ ...params, stream: true });
    const texts: string[] = [];
    const tokens: string[][] = [];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        texts[choice.index] = (texts[choice.index] ?? '') + choice.text;
        (tokens[choice.index] ??= []).push(...(choice.logprobs?.tokens ?? []));
      }
    }
    expect(texts).toEqual(completion.choices.map((choice) => choice.text));
    expect(tokens).toEqual(completion.choices.map((choice) => choice.logprobs!.tokens));
  });

  it('chat: n messages with logprobs content and top_logprobs, streaming or not', async () => {
    const params = {
      model: MODEL,
      messages: [{ role: 'user' as const, content: golden.prompt }],
      n: 2,
      temperature: 0.8,
      seed: 3,
      max_tokens: 8,
      logprobs: true,
      top_logprobs: 3,
    };
    const chat = await served.client.chat.completions.create(params);
    expect(chat.choices).toHaveLength(2);
    for (const choice of chat.choices) {
      const content = choice.logprobs!.content!;
      expect(content.map((entry) => entry.token).join('')).toBe(choice.message.content);
      for (const entry of content) {
        expect(entry.top_logprobs).toHaveLength(3);
        expect(entry.bytes).toEqual([...new TextEncoder().encode(entry.token)]);
      }
    }
    const stream = await served.client.chat.completions.create({ ...params, stream: true });
    const contents: string[] = [];
    const entries: number[] = [];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        contents[choice.index] = (contents[choice.index] ?? '') + (choice.delta.content ?? '');
        entries[choice.index] = (entries[choice.index] ?? 0) + (choice.logprobs?.content?.length ?? 0);
      }
    }
    expect(contents).toEqual(chat.choices.map((choice) => choice.message.content));
    expect(entries).toEqual(chat.choices.map((choice) => choice.logprobs!.content!.length));
  });

  it('completions: best_of and beam search (vLLM extensions) come back as n choices', async () => {
    const best = await served.client.completions.create({ model: MODEL, prompt: golden.prompt, n: 2, best_of: 4, temperature: 1, max_tokens: 6 });
    expect(best.choices.map((choice) => choice.index)).toEqual([0, 1]);
    const beams = await served.client.completions.create({
      model: MODEL,
      prompt: golden.prompt,
      n: 3,
      temperature: 0,
      max_tokens: 6,
      // Extra body fields go to the server as they are.
      ...({ use_beam_search: true, length_penalty: 0.8 } as object),
    });
    expect(beams.choices).toHaveLength(3);
    expect(new Set(beams.choices.map((choice) => choice.text)).size).toBe(3);
  });

  it('a refused combination surfaces as the client\'s BadRequestError', async () => {
    const refused = served.client.completions.create({ model: MODEL, prompt: golden.prompt, n: 1, best_of: 2, temperature: 1, stream: true });
    const error = await refused.then(() => null, (reason: unknown) => reason);
    // (vLLM's flat error body has no "error" member, so the client does not pick up its
    // message; test/http/multi-sequence.test.ts checks the body itself.)
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).status).toBe(400);
  });
});
