/**
 * LangChain (`@langchain/openai` ChatOpenAI) against `npm start`, pointed at it with
 * `configuration.baseURL` as for any OpenAI-compatible server. The embedded model writes
 * nonsense, so outputs are checked for shape and constraints, not for meaning.
 */
import { HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { golden } from '../http/helpers.js';
import { servedUrl } from './spawn-server.js';

const served = servedUrl();
const chatModel = (options: ConstructorParameters<typeof ChatOpenAI>[0] = {}) =>
  new ChatOpenAI({ model: 'stories260k', apiKey: 'not-needed', configuration: { baseURL: `${served.url}/v1` }, maxRetries: 0, ...options });

const weatherInput = z.object({ city: z.string().max(12), days: z.number().int().min(1).max(7) });
const weather = tool(async () => 'sunny', { name: 'get_weather', description: 'The weather forecast for a city', schema: weatherInput });
const timeInput = z.object({ zone: z.enum(['UTC', 'CET']) });
const time = tool(async () => '12:00', { name: 'get_time', description: 'The time in a zone', schema: timeInput });
const question = [new HumanMessage('What is the weather in Paris?')];

describe('LangChain ChatOpenAI against `npm start`', () => {
  it('invoke: the greedy answer', async () => {
    const reply = await chatModel({ temperature: 0, stop: ['.'] }).invoke(golden.prompt);
    expect(reply.content).toBe(', there was a little girl named Lily');
    expect(reply.response_metadata.finish_reason).toBe('stop');
  });

  it('invoke with no max tokens: the answer is not cut at 16 tokens', async () => {
    const reply = await chatModel({ temperature: 0 }).invoke(golden.prompt);
    expect(reply.usage_metadata!.output_tokens).toBeGreaterThan(16);
  });

  it('stream: the same answer in several chunks', async () => {
    let text = '';
    let chunks = 0;
    for await (const chunk of await chatModel({ temperature: 0, stop: ['.'] }).stream(golden.prompt)) {
      text += chunk.content as string;
      chunks++;
    }
    expect(text).toBe(', there was a little girl named Lily');
    expect(chunks).toBeGreaterThan(2);
  });

  it("an invalid request: the error carries the server's message and param", async () => {
    const error = (await chatModel({ topP: 0 }).invoke(golden.prompt).catch((e: unknown) => e)) as Error & { status?: number; param?: string };
    expect(error).toBeInstanceOf(Error);
    expect(error.status).toBe(400);
    expect(error.message).toContain('top_p must be a number in (0.0, 1.0], got 0');
    expect(error.param).toBe('top_p');
  });

  it('bindTools with a named tool: one call of it, streamed and not', async () => {
    const bound = chatModel().bindTools([weather, time], { tool_choice: 'get_weather' });
    const reply = await bound.invoke(question);
    expect(reply.tool_calls).toHaveLength(1);
    expect(reply.tool_calls![0]!.name).toBe('get_weather');
    expect(() => weatherInput.parse(reply.tool_calls![0]!.args)).not.toThrow();

    let streamed: Awaited<ReturnType<typeof bound.invoke>> | undefined;
    for await (const chunk of await bound.stream(question)) streamed = streamed === undefined ? chunk : streamed.concat(chunk);
    expect(streamed!.tool_calls).toHaveLength(1);
    expect(streamed!.tool_calls![0]!.name).toBe('get_weather');
    expect(streamed!.tool_calls![0]!.id).toMatch(/^chatcmpl-tool-/);
    expect(() => weatherInput.parse(streamed!.tool_calls![0]!.args)).not.toThrow();
  });

  it('bindTools with tool_choice "required": a call of one of the tools, streamed and not', async () => {
    const bound = chatModel().bindTools([weather, time], { tool_choice: 'required', parallel_tool_calls: false });
    const reply = await bound.invoke(question);
    expect(reply.tool_calls).toHaveLength(1);
    const call = reply.tool_calls![0]!;
    expect(() => (call.name === 'get_weather' ? weatherInput : timeInput).parse(call.args)).not.toThrow();
    expect(reply.response_metadata.finish_reason).toBe('tool_calls');

    let streamed: Awaited<ReturnType<typeof bound.invoke>> | undefined;
    for await (const chunk of await bound.stream(question)) streamed = streamed === undefined ? chunk : streamed.concat(chunk);
    expect(streamed!.tool_calls).toHaveLength(1);
    const streamedCall = streamed!.tool_calls![0]!;
    expect(() => (streamedCall.name === 'get_weather' ? weatherInput : timeInput).parse(streamedCall.args)).not.toThrow();
    expect(streamed!.response_metadata.finish_reason).toBe('tool_calls');
  });

  it('withStructuredOutput, no max tokens: a whole, valid object (JSON Schema and function calling)', async () => {
    const pet = z.object({ name: z.string().max(10), legs: z.number().int().min(0).max(4), mood: z.enum(['happy', 'sad']) });
    for (const method of ['jsonSchema', 'functionCalling'] as const) {
      const result = await chatModel().withStructuredOutput(pet, { method }).invoke('Tell me about a dog.');
      expect(() => pet.parse(result)).not.toThrow();
    }
  });

  it('a tool result in the history is answered', async () => {
    const bound = chatModel().bindTools([weather], { tool_choice: 'get_weather' });
    const call = await bound.invoke(question);
    const result = await weather.invoke(call.tool_calls![0]!);
    expect(result.tool_call_id).toBe(call.tool_calls![0]!.id);
    const answer = await chatModel({ temperature: 0, maxTokens: 8 }).invoke([...question, call, result]);
    const plain = await chatModel({ temperature: 0, maxTokens: 8 }).invoke(question);
    expect(typeof answer.content).toBe('string');
    // The tool's result ("sunny") is part of the prompt the template rendered.
    expect(answer.usage_metadata!.input_tokens).toBeGreaterThan(plain.usage_metadata!.input_tokens);
  });
});
