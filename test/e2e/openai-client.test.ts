import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { golden } from '../http/helpers.js';
import { servedOpenAIClient } from './spawn-server.js';

const MODEL = 'stories260k';
const served = servedOpenAIClient();

describe('the official openai client against `npm start`', () => {
  it('lists the served model', async () => {
    const models = await served.client.models.list();
    expect(models.data.map((model) => model.id)).toEqual([MODEL]);
  });

  it('completions: greedy output is the golden continuation', async () => {
    const completion = await served.client.completions.create({ model: MODEL, prompt: golden.prompt, temperature: 0, max_tokens: 100 });
    expect(completion.choices[0]!.text).toBe(golden.completion_text);
    expect(completion.choices[0]!.finish_reason).toBe('length');
    expect(completion.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 100, total_tokens: 105 });
  });

  it('completions: streaming adds up to the same text, with usage at the end', async () => {
    const stream = await served.client.completions.create({
      model: MODEL,
      prompt: golden.prompt,
      temperature: 0,
      max_tokens: 100,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(golden.completion_text);
    expect(usage).toMatchObject({ completion_tokens: 100 });
  });

  it('completions: stop string', async () => {
    const completion = await served.client.completions.create({ model: MODEL, prompt: golden.prompt, temperature: 0, max_tokens: 100, stop: [' girl'] });
    expect(completion.choices[0]!.text).toBe(', there was a little');
    expect(completion.choices[0]!.finish_reason).toBe('stop');
  });

  it('chat: non-streaming and streaming give the same greedy answer', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: golden.prompt }];
    const chat = await served.client.chat.completions.create({ model: MODEL, messages, temperature: 0, max_tokens: 50, stop: ['.'] });
    expect(chat.choices[0]!.message.role).toBe('assistant');
    expect(chat.choices[0]!.message.content).toBe(', there was a little girl named Lily');
    expect(chat.choices[0]!.finish_reason).toBe('stop');

    const stream = await served.client.chat.completions.create({ model: MODEL, messages, temperature: 0, max_tokens: 50, stop: ['.'], stream: true });
    let content = '';
    let role: string | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      role ??= chunk.choices[0]?.delta.role;
      content += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(role).toBe('assistant');
    expect(content).toBe(chat.choices[0]!.message.content);
    expect(finish).toBe('stop');
  });

  it('the same seed reproduces the same text at temperature 1; another seed does not', async () => {
    const sample = async (seed: number) =>
      (await served.client.completions.create({ model: MODEL, prompt: golden.prompt, temperature: 1, max_tokens: 40, seed })).choices[0]!.text;
    const first = await sample(1234);
    expect(await sample(1234)).toBe(first);
    expect(await sample(99)).not.toBe(first);
    const chat = async (seed: number) =>
      (await served.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Tom had a dog.' }], temperature: 1, max_tokens: 40, seed }))
        .choices[0]!.message.content;
    expect(await chat(7)).toBe(await chat(7));
  });

  // openai-node takes message, param and code from the body's nested "error" object.
  it("an invalid request surfaces as OpenAI.BadRequestError with the server's message and param", async () => {
    const error = await served.client.completions.create({ model: MODEL, prompt: golden.prompt, temperature: -1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const badRequest = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(badRequest.status).toBe(400);
    expect(badRequest.param).toBe('temperature');
    expect(badRequest.message).toBe('400 temperature must be a number >= 0.0, got -1');
  });

  it('an unknown model surfaces as OpenAI.NotFoundError', async () => {
    const error = await served.client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).status).toBe(404);
  });
});
