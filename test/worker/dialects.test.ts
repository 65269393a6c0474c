/**
 * Anthropic's Messages API and OpenAI's Responses API in workerd, through the real SDKs
 * (their `fetch` pointed at the Worker): the embedded model in the Worker, and the gateway
 * in front of the Node server, both forwarding natively (the Node server speaks both) and
 * translating into chat completions (an upstream that `speaks` neither). Greedy, so the
 * three paths must agree token for token.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, inject, it } from 'vitest';
import gateway from '../../src/runtime/worker/gateway.js';
import worker from '../../src/runtime/worker/main.js';
import type { WorkerHandler } from '../../src/runtime/worker/handler.js';
import type { WorkerEnv } from '../../src/runtime/worker/env.js';
import { workerEnv } from './helpers.js';

const nodeServerUrl = inject('nodeServerUrl');
const MODEL = 'stories260k';
/** temperature: the Anthropic SDK's current types leave it out; it sends it (see test/e2e/anthropic-client.test.ts). */
const GREEDY = { temperature: 0 } as {};

function fetchVia(handler: WorkerHandler, env: WorkerEnv): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => handler.fetch(new Request(input, init), env)) as typeof fetch;
}

function clients(handler: WorkerHandler, env: WorkerEnv) {
  const viaWorker = fetchVia(handler, env);
  return {
    anthropic: new Anthropic({ baseURL: 'http://worker.test', apiKey: 'unused', maxRetries: 0, fetch: viaWorker }),
    openai: new OpenAI({ baseURL: 'http://worker.test/v1', apiKey: 'unused', maxRetries: 0, fetch: viaWorker }),
  };
}

const tools: Anthropic.Tool[] = [
  {
    name: 'get_weather',
    input_schema: { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['city', 'days'] },
  },
];
const question: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];

/** The two-step round trip with each SDK; what a path produced, to compare paths. */
async function roundTrips(handler: WorkerHandler, env: WorkerEnv) {
  const { anthropic, openai } = clients(handler, env);
  const forced = { model: MODEL, messages: question, tools, tool_choice: { type: 'tool' as const, name: 'get_weather' }, max_tokens: 48, ...GREEDY };
  const first = await anthropic.messages.create(forced);
  expect(first.stop_reason).toBe('tool_use');
  const call = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
  expect(call.name).toBe('get_weather');
  const streamed = await anthropic.messages.stream(forced).finalMessage();
  expect(streamed.content.find((block) => block.type === 'tool_use')).toMatchObject({ name: call.name, input: call.input });
  const followUp: Anthropic.MessageParam[] = [
    ...question,
    { role: 'assistant', content: first.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny.' }] },
  ];
  const answer = await anthropic.messages.create({ model: MODEL, messages: followUp, tools, tool_choice: { type: 'none' }, max_tokens: 12, ...GREEDY });
  const answerStreamed = await anthropic.messages.stream({ model: MODEL, messages: followUp, tools, tool_choice: { type: 'none' }, max_tokens: 12, ...GREEDY }).finalMessage();
  expect(answerStreamed.content).toEqual(answer.content);
  expect(answer.content[0]!.type).toBe('text');

  const functionTools: OpenAI.Responses.FunctionTool[] = [{ type: 'function', name: 'get_weather', parameters: tools[0]!.input_schema as Record<string, unknown>, strict: false }];
  const request = { model: MODEL, input: 'What is the weather in Paris?', tools: functionTools, tool_choice: { type: 'function' as const, name: 'get_weather' }, max_output_tokens: 48, temperature: 0 };
  const response = await openai.responses.create(request);
  const fc = response.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
  expect(fc.name).toBe('get_weather');
  const responseStreamed = await openai.responses.stream(request).finalResponse();
  expect((responseStreamed.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall).arguments).toBe(fc.arguments);
  const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'What is the weather in Paris?' }, fc, { type: 'function_call_output', call_id: fc.call_id, output: 'Sunny.' }];
  const second = await openai.responses.create({ model: MODEL, input, tools: functionTools, tool_choice: 'none', max_output_tokens: 12, temperature: 0 });
  expect(second.output_text.length).toBeGreaterThan(0);
  const secondStreamed = await openai.responses.stream({ model: MODEL, input, tools: functionTools, tool_choice: 'none', max_output_tokens: 12, temperature: 0 }).finalResponse();
  expect(secondStreamed.output_text).toBe(second.output_text);
  return { toolInput: call.input, answer: answer.content, functionArguments: fc.arguments, responseText: second.output_text };
}

describe('/v1/messages and /v1/responses in workerd', () => {
  let local: Awaited<ReturnType<typeof roundTrips>>;

  it('the Worker with the embedded model: both SDKs, a two-step tool round trip, streamed and not', async () => {
    local = await roundTrips(worker, workerEnv());
  });

  it('the gateway forwarding to an upstream that speaks both (the Node server): the same output', async () => {
    const env = workerEnv({ UPSTREAMS: JSON.stringify([{ name: 'node', url: nodeServerUrl, model: MODEL }]) });
    expect(await roundTrips(gateway, env)).toEqual(local);
  });

  it('the gateway translating into chat completions for an upstream that speaks neither: the same output', async () => {
    const env = workerEnv({ UPSTREAMS: JSON.stringify([{ name: 'node', url: nodeServerUrl, model: MODEL, speaks: [] }]) });
    expect(await roundTrips(gateway, env)).toEqual(local);
    const { anthropic } = clients(gateway, env);
    // count_tokens needs the upstream's template: refused in Anthropic's shape.
    const refused = await anthropic.messages.countTokens({ model: MODEL, messages: question }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
  });

  it('the gateway\'s refusals on /v1/messages are in Anthropic\'s shape, x-api-key accepted', async () => {
    const env = workerEnv({ API_KEY: 'sk-edge', UPSTREAMS: JSON.stringify([{ name: 'node', url: nodeServerUrl, model: MODEL }]) });
    const wrong = new Anthropic({ baseURL: 'http://worker.test', apiKey: 'sk-wrong', maxRetries: 0, fetch: fetchVia(gateway, env) });
    const error = await wrong.messages.create({ model: MODEL, messages: question, max_tokens: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((error as InstanceType<typeof Anthropic.AuthenticationError>).error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const right = new Anthropic({ baseURL: 'http://worker.test', apiKey: 'sk-edge', maxRetries: 0, fetch: fetchVia(gateway, env) });
    expect((await right.messages.create({ model: MODEL, messages: question, max_tokens: 2 })).usage.output_tokens).toBe(2);
  });
});

describe('the gateway in front of llama.cpp\'s server (its own /v1/messages, an implementation this project did not write)', () => {
  function llamaServerUrl(): string {
    const url = inject('llamaServerUrl');
    if (url === '') throw new Error(inject('llamaServerError'));
    return url;
  }
  const request = { model: MODEL, system: 'A story.', messages: [{ role: 'user' as const, content: 'Once upon a time' }], max_tokens: 16, ...GREEDY };

  it('forwarded to llama.cpp\'s /v1/messages and translated to its chat completions: the same message, streamed and not', async () => {
    const native = clients(gateway, workerEnv({ UPSTREAMS: JSON.stringify([{ name: 'llama', url: llamaServerUrl(), model: MODEL, dialect: 'llama.cpp' }]) })).anthropic;
    const translated = clients(gateway, workerEnv({ UPSTREAMS: JSON.stringify([{ name: 'llama', url: llamaServerUrl(), model: MODEL, dialect: 'llama.cpp', speaks: [] }]) })).anthropic;
    const direct = await native.messages.create(request);
    expect(direct.content[0]!.type).toBe('text');
    expect(direct.stop_reason).toBe('max_tokens');
    const ours = await translated.messages.create(request);
    expect(ours.content).toEqual(direct.content);
    expect(ours.stop_reason).toBe(direct.stop_reason);
    expect(ours.usage.output_tokens).toBe(direct.usage.output_tokens);
    expect(ours.usage.input_tokens).toBe(direct.usage.input_tokens + (direct.usage.cache_read_input_tokens ?? 0));
    expect((await translated.messages.stream(request).finalMessage()).content).toEqual(direct.content);
    expect((await native.messages.stream(request).finalMessage()).content).toEqual(direct.content);
  });
});
