import OpenAI from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
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

  const weatherInput = z.object({ city: z.string().max(12), days: z.number().int().min(1).max(7) });
  const timeInput = z.object({ zone: z.enum(['UTC', 'CET']) });
  const tools = [zodFunction({ name: 'get_weather', parameters: weatherInput }), zodFunction({ name: 'get_time', parameters: timeInput })];
  const question: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const nameAndArguments = (call: OpenAI.ChatCompletionMessageToolCall) =>
    call.type === 'function' ? { name: call.function.name, arguments: call.function.arguments } : null;
  const inputOf = (call: OpenAI.ChatCompletionMessageToolCall) => {
    if (call.type !== 'function') throw new Error(`not a function call: ${call.type}`);
    return (call.function.name === 'get_weather' ? weatherInput : timeInput).parse(JSON.parse(call.function.arguments));
  };

  it('a named tool: one call of it, streamed (the SDK adds up the deltas) and not', async () => {
    const tool_choice = { type: 'function', function: { name: 'get_weather' } } as const;
    const chat = await served.client.chat.completions.create({ model: MODEL, messages: question, tools, tool_choice, seed: 1 });
    const message = chat.choices[0]!.message;
    expect(message.tool_calls).toHaveLength(1);
    expect(inputOf(message.tool_calls![0]!)).toBeTruthy();
    expect(chat.choices[0]!.finish_reason).toBe('stop');

    const stream = served.client.chat.completions.stream({ model: MODEL, messages: question, tools, tool_choice, seed: 1 });
    const final = await stream.finalChatCompletion();
    const streamedCall = final.choices[0]!.message.tool_calls![0]!;
    expect(nameAndArguments(streamedCall)).toEqual(nameAndArguments(message.tool_calls![0]!));
  });

  it('tool_choice "required": calls of the tools, streamed and not', async () => {
    const request = { model: MODEL, messages: question, tools, tool_choice: 'required', parallel_tool_calls: false, seed: 2 } as const;
    const chat = await served.client.chat.completions.create(request);
    expect(chat.choices[0]!.finish_reason).toBe('tool_calls');
    expect(chat.choices[0]!.message.tool_calls).toHaveLength(1);
    expect(inputOf(chat.choices[0]!.message.tool_calls![0]!)).toBeTruthy();

    const final = await served.client.chat.completions.stream(request).finalChatCompletion();
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect(final.choices[0]!.message.tool_calls!.map(nameAndArguments)).toEqual(chat.choices[0]!.message.tool_calls!.map(nameAndArguments));
  });

  it('a structured object with no max_tokens: parse() returns a whole, valid object', async () => {
    const pet = z.object({ name: z.string().max(10), legs: z.number().int().min(0).max(4), mood: z.enum(['happy', 'sad']) });
    const chat = await served.client.chat.completions.parse({
      model: MODEL,
      messages: [{ role: 'user', content: 'Tell me about a dog.' }],
      response_format: zodResponseFormat(pet, 'pet'),
      seed: 7,
    });
    expect(chat.choices[0]!.finish_reason).toBe('stop');
    expect(pet.parse(chat.choices[0]!.message.parsed)).toBeTruthy();
  });
});
