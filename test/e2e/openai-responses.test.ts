import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { golden } from '../http/helpers.js';
import { servedOpenAIClient } from './spawn-server.js';

const MODEL = 'stories260k';
const served = servedOpenAIClient();

const weatherInput = z.object({ city: z.string().max(12), days: z.number().int().min(1).max(7) });
const tools: OpenAI.Responses.FunctionTool[] = [
  {
    type: 'function',
    name: 'get_weather',
    description: 'The forecast for a city',
    strict: true,
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer', minimum: 1, maximum: 7 } },
      required: ['city', 'days'],
      additionalProperties: false,
    },
  },
];

describe('the openai client\'s responses API against `npm start`', () => {
  it('responses.create: the chat route\'s greedy answer as one output message; output_text; usage', async () => {
    const response = await served.client.responses.create({ model: MODEL, instructions: 'A story.', input: golden.prompt, max_output_tokens: 24, temperature: 0 });
    const chat = await served.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'system', content: 'A story.' }, { role: 'user', content: golden.prompt }],
      max_tokens: 24,
      temperature: 0,
    });
    expect(response.object).toBe('response');
    expect(response.id).toMatch(/^resp_/);
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
    expect(response.output_text).toBe(chat.choices[0]!.message.content);
    // Cut by max_output_tokens: incomplete, as OpenAI reports it.
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(response.usage).toMatchObject({ input_tokens: chat.usage!.prompt_tokens, output_tokens: 24, total_tokens: chat.usage!.prompt_tokens + 24 });
  });

  it('streamed: created, in_progress, the item and part events, text deltas, then incomplete; the SDK\'s stream assembles the same response', async () => {
    const request = { model: MODEL, input: [{ role: 'user' as const, content: golden.prompt }], max_output_tokens: 20, temperature: 0 };
    const whole = await served.client.responses.create(request);
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of await served.client.responses.create({ ...request, stream: true })) events.push(event);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, i) => i));
    const types = events.map((event) => event.type);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-5)).toEqual(['response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete']);
    const text = events.flatMap((event) => (event.type === 'response.output_text.delta' ? [event.delta] : [])).join('');
    expect(text).toBe(whole.output_text);

    const final = await served.client.responses.stream(request).finalResponse();
    expect(final.output_text).toBe(whole.output_text);
    expect(final.usage).toEqual(whole.usage);
  });

  it('a tool round trip: a function_call (tool_choice names it), then the answer from its function_call_output; streamed and not', async () => {
    const first = await served.client.responses.create({
      model: MODEL,
      input: 'What is the weather in Paris?',
      tools,
      tool_choice: { type: 'function', name: 'get_weather' },
      max_output_tokens: 64,
      temperature: 0,
    });
    expect(first.status).toBe('completed');
    const call = first.output.find((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call')!;
    expect(call.name).toBe('get_weather');
    expect(weatherInput.parse(JSON.parse(call.arguments))).toBeTruthy();

    const streamed = await served.client.responses
      .stream({ model: MODEL, input: 'What is the weather in Paris?', tools, tool_choice: { type: 'function', name: 'get_weather' }, max_output_tokens: 64, temperature: 0 })
      .finalResponse();
    const streamedCall = streamed.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect({ name: streamedCall.name, arguments: streamedCall.arguments }).toEqual({ name: call.name, arguments: call.arguments });

    // Step two, the whole conversation in `input`.
    const input: OpenAI.Responses.ResponseInput = [
      { role: 'user', content: 'What is the weather in Paris?' },
      call,
      { type: 'function_call_output', call_id: call.call_id, output: 'Sunny and warm.' },
    ];
    const second = await served.client.responses.create({ model: MODEL, input, tools, tool_choice: 'none', max_output_tokens: 16, temperature: 0 });
    expect(second.output).toHaveLength(1);
    expect(second.output[0]!.type).toBe('message');
    expect(second.output_text.length).toBeGreaterThan(0);
    const secondStreamed = await served.client.responses.stream({ model: MODEL, input, tools, tool_choice: 'none', max_output_tokens: 16, temperature: 0 }).finalResponse();
    expect(secondStreamed.output_text).toBe(second.output_text);

    // The same step by previous_response_id: the stored conversation plus the output.
    const chained = await served.client.responses.create({
      model: MODEL,
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'Sunny and warm.' }],
      tools,
      tool_choice: 'none',
      max_output_tokens: 16,
      temperature: 0,
    });
    expect(chained.previous_response_id).toBe(first.id);
    expect(chained.output_text).toBe(second.output_text);
    expect(chained.usage!.input_tokens).toBe(second.usage!.input_tokens);
    expect((await served.client.responses.retrieve(chained.id)).output_text).toBe(chained.output_text);
  });

  it('text.format json_schema: the output is a valid object of the schema', async () => {
    const pet = z.object({ name: z.string().max(10), legs: z.number().int().min(0).max(4) });
    const response = await served.client.responses.create({
      model: MODEL,
      input: 'Tell me about a dog.',
      text: {
        format: {
          type: 'json_schema',
          name: 'pet',
          strict: true,
          schema: {
            type: 'object',
            properties: { name: { type: 'string', maxLength: 10 }, legs: { type: 'integer', minimum: 0, maximum: 4 } },
            required: ['name', 'legs'],
            additionalProperties: false,
          },
        },
      },
      temperature: 0,
    });
    expect(response.status).toBe('completed');
    expect(pet.parse(JSON.parse(response.output_text))).toBeTruthy();
  });

  it('bad input: BadRequestError naming the field; an unknown previous_response_id: NotFoundError', async () => {
    const error = await served.client.responses.create({ model: MODEL, input: 'hi', temperature: 3 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('temperature');
    const builtIn = await served.client.responses.create({ model: MODEL, input: 'hi', tools: [{ type: 'web_search' }] }).catch((e: unknown) => e);
    expect(builtIn).toBeInstanceOf(OpenAI.BadRequestError);
    expect((builtIn as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('tools[0].type');
    const missing = await served.client.responses.create({ model: MODEL, input: 'hi', previous_response_id: 'resp_nothing' }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect((missing as InstanceType<typeof OpenAI.NotFoundError>).param).toBe('previous_response_id');
  });
});
