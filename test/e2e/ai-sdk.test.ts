/**
 * The Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`) against `npm start`, configured
 * as its documentation shows for an OpenAI-compatible server. The embedded model writes
 * nonsense, so outputs are checked for shape and constraints, not for meaning.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateObject, generateText, jsonSchema, streamText, tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { golden } from '../http/helpers.js';
import { servedUrl } from './spawn-server.js';

const served = servedUrl();
const model = (options: { supportsStructuredOutputs?: boolean } = {}) =>
  createOpenAICompatible({ name: 'edge', baseURL: `${served.url}/v1`, ...options }).chatModel('stories260k');

const weatherInput = z.object({ city: z.string().max(12), days: z.number().int().min(1).max(7) });
const weather = tool({ description: 'The weather forecast for a city', inputSchema: weatherInput });
const time = tool({
  description: 'The time in a zone',
  inputSchema: jsonSchema<{ zone: 'UTC' | 'CET' }>({
    type: 'object',
    properties: { zone: { enum: ['UTC', 'CET'] } },
    required: ['zone'],
    additionalProperties: false,
  }),
});
const tools = { get_weather: weather, get_time: time };
const prompt = 'What is the weather in Paris?';

describe('the Vercel AI SDK against `npm start`', () => {
  it('generateText: the greedy answer, with usage', async () => {
    const result = await generateText({ model: model(), prompt: golden.prompt, temperature: 0, maxOutputTokens: 50, stopSequences: ['.'] });
    expect(result.text).toBe(', there was a little girl named Lily');
    expect(result.finishReason).toBe('stop');
    expect(result.usage.outputTokens).toBeGreaterThan(0);
  });

  it('streamText: the same text streamed', async () => {
    const result = streamText({ model: model(), prompt: golden.prompt, temperature: 0, maxOutputTokens: 50, stopSequences: ['.'] });
    let text = '';
    let parts = 0;
    for await (const part of result.textStream) {
      text += part;
      parts++;
    }
    expect(text).toBe(', there was a little girl named Lily');
    expect(parts).toBeGreaterThan(1);
  });

  it("an invalid request: APICallError with the server's message and param", async () => {
    const error = await generateText({ model: model(), prompt, topP: 0, maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(error)).toBe(true);
    const apiError = error as APICallError;
    expect(apiError.statusCode).toBe(400);
    expect(apiError.message).toBe('top_p must be a number in (0.0, 1.0], got 0');
    expect((apiError.data as { error: { param: string } }).error.param).toBe('top_p');
  });

  it('a named tool: one call of it, its input valid for the schema', async () => {
    const result = await generateText({ model: model(), prompt, tools, toolChoice: { type: 'tool', toolName: 'get_weather' }, seed: 1 });
    expect(result.toolCalls).toHaveLength(1);
    expect(result.toolCalls[0]!.toolName).toBe('get_weather');
    expect(() => weatherInput.parse(result.toolCalls[0]!.input)).not.toThrow();
  });

  it('a named tool, streamed', async () => {
    const result = streamText({ model: model(), prompt, tools, toolChoice: { type: 'tool', toolName: 'get_weather' }, seed: 2 });
    const calls = await result.toolCalls;
    expect(calls).toHaveLength(1);
    expect(calls[0]!.toolName).toBe('get_weather');
    expect(() => weatherInput.parse(calls[0]!.input)).not.toThrow();
  });

  it('toolChoice "required": a call of one of the tools, streamed and not', async () => {
    // One call per answer: the embedded model would otherwise keep adding calls up to the context length.
    const providerOptions = { edge: { parallel_tool_calls: false } };
    const result = await generateText({ model: model(), prompt, tools, toolChoice: 'required', seed: 3, providerOptions });
    expect(result.toolCalls).toHaveLength(1);
    expect(['get_weather', 'get_time']).toContain(result.toolCalls[0]!.toolName);
    expect(result.finishReason).toBe('tool-calls');

    const streamed = streamText({ model: model(), prompt, tools, toolChoice: 'required', seed: 3, providerOptions });
    const calls = await streamed.toolCalls;
    expect(calls.map((call) => [call.toolName, call.input])).toEqual(result.toolCalls.map((call) => [call.toolName, call.input]));
    expect(await streamed.finishReason).toBe('tool-calls');
  });

  it('generateObject with a schema and no max tokens: a whole, valid object', async () => {
    const schema = z.object({ name: z.string().max(10), legs: z.number().int().min(0).max(4), mood: z.enum(['happy', 'sad']) });
    const result = await generateObject({ model: model({ supportsStructuredOutputs: true }), schema, prompt: 'Tell me about a dog.', seed: 7 });
    expect(() => schema.parse(result.object)).not.toThrow();
    expect(result.finishReason).toBe('stop');
  });
});
