import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { golden } from '../http/helpers.js';
import { servedUrl } from './spawn-server.js';

const MODEL = 'stories260k';
/**
 * Greedy decoding, so the tiny model's output is reproducible. The SDK's current types no
 * longer list `temperature` (Anthropic's newest models refuse it), but it sends what it is
 * given and vLLM and llama.cpp read it, as this server does.
 */
const GREEDY = { temperature: 0 } as {};
const served = servedUrl();
const client = () => new Anthropic({ baseURL: served.url, apiKey: 'unused', maxRetries: 0 });

/** What /v1/chat/completions answers for the same conversation: /v1/messages is served through the chat route. */
async function chatAnswer(body: Record<string, unknown>): Promise<{ content: string; finish_reason: string; usage: { prompt_tokens: number; completion_tokens: number } }> {
  const response = await fetch(`${served.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, temperature: 0, ...body }),
  });
  const chat = (await response.json()) as { choices: [{ message: { content: string }; finish_reason: string }]; usage: { prompt_tokens: number; completion_tokens: number } };
  return { content: chat.choices[0].message.content, finish_reason: chat.choices[0].finish_reason, usage: chat.usage };
}

const weatherInput = z.object({ city: z.string().max(12), days: z.number().int().min(1).max(7) });
const tools: Anthropic.Tool[] = [
  {
    name: 'get_weather',
    description: 'The forecast for a city',
    input_schema: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer', minimum: 1, maximum: 7 } },
      required: ['city', 'days'],
      additionalProperties: false,
    },
  },
];

describe('@anthropic-ai/sdk against `npm start`', () => {
  it('messages.create: the chat route\'s greedy answer as one text block, with usage', async () => {
    const message = await client().messages.create({
      model: MODEL,
      system: 'A story.',
      messages: [{ role: 'user', content: golden.prompt }],
      max_tokens: 24,
      ...GREEDY,
    });
    const chat = await chatAnswer({ messages: [{ role: 'system', content: 'A story.' }, { role: 'user', content: golden.prompt }], max_tokens: 24 });
    expect(message.type).toBe('message');
    expect(message.role).toBe('assistant');
    expect(message.id).toMatch(/^msg_/);
    expect(message.model).toBe(MODEL);
    expect(message.content).toEqual([{ type: 'text', text: chat.content }]);
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.stop_sequence).toBeNull();
    expect(message.usage).toMatchObject({ input_tokens: chat.usage.prompt_tokens, output_tokens: 24 });
  });

  it('stop_sequences: stop_reason "stop_sequence" names the one that matched', async () => {
    const message = await client().messages.create({
      model: MODEL,
      messages: [{ role: 'user', content: golden.prompt }],
      max_tokens: 50,
      ...GREEDY,
      stop_sequences: [' girl', 'zebra'],
    });
    expect(message.content).toEqual([{ type: 'text', text: ', there was a little' }]);
    expect(message.stop_reason).toBe('stop_sequence');
    expect(message.stop_sequence).toBe(' girl');
  });

  it('messages.stream: Anthropic\'s event sequence, adding up to the same message as create', async () => {
    const request = { model: MODEL, messages: [{ role: 'user' as const, content: golden.prompt }], max_tokens: 30, ...GREEDY };
    const whole = await client().messages.create(request);
    const stream = client().messages.stream(request);
    const types: string[] = [];
    let text = '';
    stream.on('streamEvent', (event) => types.push(event.type));
    stream.on('text', (delta) => (text += delta));
    const final = await stream.finalMessage();
    expect(final.content).toEqual(whole.content);
    expect(text).toBe((whole.content[0] as Anthropic.TextBlock).text);
    expect(final.stop_reason).toBe('max_tokens');
    expect(final.usage.output_tokens).toBe(30);
    expect(final.usage.input_tokens).toBe(whole.usage.input_tokens);
    // message_start, one text block (start, deltas, stop), message_delta, message_stop.
    expect(types[0]).toBe('message_start');
    expect(types[1]).toBe('content_block_start');
    expect(types.slice(2, -3).every((type) => type === 'content_block_delta')).toBe(true);
    expect(types.length).toBeGreaterThan(5);
    expect(types.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
  });

  it('a two-step tool round trip: tool_use (forced by tool_choice), then the answer from the tool_result; streamed and not', async () => {
    const question: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const first = await client().messages.create({
      model: MODEL,
      messages: question,
      tools,
      tool_choice: { type: 'tool', name: 'get_weather' },
      max_tokens: 64,
      ...GREEDY,
    });
    expect(first.stop_reason).toBe('tool_use');
    const toolUse = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
    expect(toolUse.name).toBe('get_weather');
    expect(toolUse.id).toMatch(/\S/);
    expect(weatherInput.parse(toolUse.input)).toBeTruthy();

    // The same call streamed: the SDK assembles the input from input_json_delta events.
    const streamed = await client()
      .messages.stream({ model: MODEL, messages: question, tools, tool_choice: { type: 'tool', name: 'get_weather' }, max_tokens: 64, ...GREEDY })
      .finalMessage();
    expect(streamed.stop_reason).toBe('tool_use');
    const streamedUse = streamed.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
    expect({ name: streamedUse.name, input: streamedUse.input }).toEqual({ name: toolUse.name, input: toolUse.input });

    // Step two: the call and its result go back; the model answers in text.
    const followUp: Anthropic.MessageParam[] = [
      ...question,
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'Sunny and warm.' }] },
    ];
    const second = await client().messages.create({ model: MODEL, messages: followUp, tools, tool_choice: { type: 'none' }, max_tokens: 16, ...GREEDY });
    expect(second.content).toHaveLength(1);
    expect(second.content[0]!.type).toBe('text');
    expect(second.stop_reason).toBe('max_tokens');
    // The tool result reached the prompt: the conversation is longer than the question alone.
    const counted = await client().messages.countTokens({ model: MODEL, messages: followUp, tools });
    const questionOnly = await client().messages.countTokens({ model: MODEL, messages: question, tools });
    expect(second.usage.input_tokens).toBe(counted.input_tokens);
    expect(counted.input_tokens).toBeGreaterThan(questionOnly.input_tokens);

    const secondStreamed = await client()
      .messages.stream({ model: MODEL, messages: followUp, tools, tool_choice: { type: 'none' }, max_tokens: 16, ...GREEDY })
      .finalMessage();
    expect(secondStreamed.content).toEqual(second.content);
  });

  it('count_tokens counts what /v1/messages feeds the model', async () => {
    const counted = await client().messages.countTokens({ model: MODEL, system: 'A story.', messages: [{ role: 'user', content: golden.prompt }] });
    const message = await client().messages.create({ model: MODEL, system: 'A story.', messages: [{ role: 'user', content: golden.prompt }], max_tokens: 1 });
    expect(counted.input_tokens).toBe(message.usage.input_tokens);
  });

  it('bad input: Anthropic.BadRequestError with Anthropic\'s error body; an unknown model: NotFoundError', async () => {
    const missing = await client()
      .messages.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] } as unknown as Anthropic.MessageCreateParamsNonStreaming)
      .catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(Anthropic.BadRequestError);
    const badRequest = missing as InstanceType<typeof Anthropic.BadRequestError>;
    expect(badRequest.status).toBe(400);
    expect(badRequest.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect((badRequest.error as { error: { message: string } }).error.message).toBe('max_tokens is required');

    const unknown = await client()
      .messages.create({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 })
      .catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
    expect((unknown as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });
});
