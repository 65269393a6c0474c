import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { Engine } from '../../src/engine/types.js';
import { createApp } from '../../src/http/app.js';
import { MODEL, expectError, golden, loadEngine, postJson, ssePayloads, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const BOS = 1;
const EOS = 2;
// The model's template (tokenizer_config.json) writes BOS then the message contents.
const story = [{ role: 'user', content: golden.prompt }];
const greedy = { model: MODEL, messages: story, temperature: 0, max_tokens: 100 };

interface ChatChunk {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: Array<{ index: number; delta: { role?: string; content?: string }; logprobs: null; finish_reason: string | null; stop_reason?: unknown }>;
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

async function streamChunks(body: object): Promise<ChatChunk[]> {
  const response = await postJson(testApp(engine), '/v1/chat/completions', { ...body, stream: true });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const payloads = ssePayloads(await response.text());
  expect(payloads.at(-1)).toBe('[DONE]');
  return payloads.slice(0, -1).map((payload) => JSON.parse(payload) as ChatChunk);
}

describe('chat prompt rendering', () => {
  it('renders messages with the model template into exactly one BOS', async () => {
    const response = await postJson(testApp(engine), '/tokenize', { model: MODEL, messages: story });
    const { tokens } = (await response.json()) as { tokens: number[] };
    expect(tokens).toEqual(golden.prompt_ids);
    expect(tokens.filter((id) => id === BOS)).toHaveLength(1);
  });

  it('continue_final_message drops what the template closes the last message with', async () => {
    const template = '{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}';
    const messages = [{ role: 'user', content: 'Tell me a story.' }, { role: 'assistant', content: golden.prompt }];
    const tokenize = async (extra: object) =>
      ((await (await postJson(testApp(engine, { trustRequestChatTemplate: true }), '/tokenize', { messages, chat_template: template, ...extra })).json()) as { tokens: number[] })
        .tokens;
    const closed = await tokenize({ add_generation_prompt: false });
    const open = await tokenize({ add_generation_prompt: false, continue_final_message: true });
    expect(closed.at(-1)).toBe(EOS);
    expect(open).toEqual(closed.slice(0, -1));
    expect(open[0]).toBe(BOS);
    expect(open[1]).not.toBe(BOS);
  });
});

describe('POST /v1/chat/completions, non-streaming', () => {
  it('answers with the golden continuation in vLLM\'s ChatCompletionResponse shape', async () => {
    const response = await postJson(testApp(engine), '/v1/chat/completions', greedy);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      id: expect.stringMatching(/^chatcmpl-[0-9a-f]+$/),
      object: 'chat.completion',
      created: expect.any(Number),
      model: MODEL,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: golden.completion_text, tool_calls: [] },
          logprobs: null,
          finish_reason: 'length',
          stop_reason: null,
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 100, total_tokens: 105 },
      prompt_logprobs: null,
    });
  });

  it('continues the final assistant message, keeping its role', async () => {
    const body = await (
      await postJson(testApp(engine), '/v1/chat/completions', {
        ...greedy,
        max_tokens: 3,
        messages: [{ role: 'assistant', content: golden.prompt }],
        add_generation_prompt: false,
        continue_final_message: true,
      })
    ).json();
    expect(body.choices[0].message).toEqual({ role: 'assistant', content: ', there was', tool_calls: [] });
  });

  it('passes chat_template_kwargs to the template', async () => {
    const body = await (
      await postJson(testApp(engine, { trustRequestChatTemplate: true }), '/v1/chat/completions', {
        ...greedy,
        max_tokens: 3,
        messages: [{ role: 'user', content: 'ignored' }],
        chat_template: '{{ bos_token }}{{ opening }}',
        chat_template_kwargs: { opening: golden.prompt },
      })
    ).json();
    expect(body.choices[0].message.content).toBe(', there was');
  });

  it("refuses a conversation the template rejects, with the template's reason", async () => {
    const message = await expectError(
      postJson(testApp(engine, { trustRequestChatTemplate: true }), '/v1/chat/completions', {
        ...greedy,
        chat_template: "{{ raise_exception('Conversation roles must alternate') }}",
      }),
      400,
      'BadRequestError',
      'messages',
    );
    expect(message).toMatch(/Conversation roles must alternate/);
  });
});

describe('POST /v1/chat/completions without a usable template', () => {
  it('refuses chat for a model without a chat template, unless the request brings one', async () => {
    const app = createApp({ engine, config: parseServerConfig({ servedModelName: MODEL, trustRequestChatTemplate: true }), chatTemplate: null });
    const message = await expectError(postJson(app, '/v1/chat/completions', greedy), 400, 'BadRequestError');
    expect(message).toMatch(/no chat template/);
    const own = await postJson(app, '/v1/chat/completions', { ...greedy, max_tokens: 3, chat_template: '{{ bos_token }}{{ messages[0].content }}' });
    expect((await own.json()).choices[0].message.content).toBe(', there was');
  });

  it("refuses a request's own chat_template unless trustRequestChatTemplate is set (vLLM's --trust-request-chat-template), on /tokenize too", async () => {
    const refusal = /^Chat template is passed with request, but --trust-request-chat-template is not set\. Refused request with untrusted chat template\.$/;
    const own = { ...greedy, max_tokens: 3, chat_template: '{{ bos_token }}{{ messages[0].content }}' };
    expect(await expectError(postJson(testApp(engine), '/v1/chat/completions', own), 400, 'BadRequestError', 'chat_template')).toMatch(refusal);
    const viaKwargs = { ...greedy, chat_template_kwargs: { chat_template: '{{ bos_token }}' } };
    expect(await expectError(postJson(testApp(engine), '/v1/chat/completions', viaKwargs), 400, 'BadRequestError', 'chat_template_kwargs')).toMatch(refusal);
    expect(await expectError(postJson(testApp(engine), '/tokenize', { messages: own.messages, chat_template: own.chat_template }), 400, 'BadRequestError', 'chat_template')).toMatch(refusal);
    // The model's own template still serves the same request without the field.
    expect((await postJson(testApp(engine), '/v1/chat/completions', { ...greedy, max_tokens: 3 })).status).toBe(200);
    expect((await (await postJson(testApp(engine, { trustRequestChatTemplate: true }), '/v1/chat/completions', own)).json()).choices[0].message.content).toBe(', there was');
  });

  it('refuses a request chat_template that is not valid Jinja', async () => {
    await expectError(
      postJson(testApp(engine, { trustRequestChatTemplate: true }), '/v1/chat/completions', { ...greedy, chat_template: '{% for m in %}' }),
      400,
      'BadRequestError',
      'chat_template',
    );
  });
});

describe('POST /v1/chat/completions, streaming', () => {
  it('starts with the role chunk, streams the golden text, ends with finish_reason and [DONE]', async () => {
    const chunks = await streamChunks(greedy);
    expect(chunks[0]).toEqual({
      id: expect.stringMatching(/^chatcmpl-/),
      object: 'chat.completion.chunk',
      created: expect.any(Number),
      model: MODEL,
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    });
    const content = chunks.slice(1);
    expect(content).toHaveLength(100);
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    expect(content.every((chunk) => chunk.choices[0]!.delta.role === undefined)).toBe(true);
    expect(content.map((chunk) => chunk.choices[0]!.delta.content).join('')).toBe(golden.completion_text);
    expect(content.slice(0, -1).every((chunk) => chunk.choices[0]!.finish_reason === null)).toBe(true);
    expect(content.at(-1)!.choices[0]).toMatchObject({ finish_reason: 'length', stop_reason: null });
  });

  it('never streams part of a stop string', async () => {
    const chunks = await streamChunks({ ...greedy, stop: [' girl'] });
    expect(chunks.slice(1).map((chunk) => chunk.choices[0]!.delta.content).join('')).toBe(', there was a little');
    expect(chunks.at(-1)!.choices[0]).toMatchObject({ finish_reason: 'stop', stop_reason: ' girl' });
  });

  it('ends with a usage chunk with empty choices for include_usage', async () => {
    const chunks = await streamChunks({ ...greedy, max_tokens: 3, stream_options: { include_usage: true } });
    expect(chunks).toHaveLength(5); // role, 3 content, usage
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === undefined)).toBe(true);
    expect(chunks.at(-1)).toEqual({
      id: chunks[0]!.id,
      object: 'chat.completion.chunk',
      created: chunks[0]!.created,
      model: MODEL,
      choices: [],
      usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
    });
  });

  it('puts usage so far on every chunk with continuous_usage_stats', async () => {
    const chunks = await streamChunks({
      ...greedy,
      max_tokens: 3,
      stream_options: { include_usage: true, continuous_usage_stats: true },
    });
    expect(chunks.map((chunk) => chunk.usage?.completion_tokens)).toEqual([0, 1, 2, 3, 3]);
  });

  it('echo: the final message is put before the reply when the reply continues it (vLLM), streamed as its own chunk', async () => {
    const app = testApp(engine);
    const messages = [{ role: 'user', content: 'Hello' }, { role: 'assistant', content: 'Once upon a time' }];
    const request = { model: MODEL, messages, add_generation_prompt: false, continue_final_message: true, temperature: 0, max_tokens: 5 };
    const plain = await (await postJson(app, '/v1/chat/completions', request)).json();
    const echoed = await (await postJson(app, '/v1/chat/completions', { ...request, echo: true })).json();
    expect(echoed.choices[0].message.content).toBe('Once upon a time' + plain.choices[0].message.content);
    expect(echoed.usage).toEqual(plain.usage);
    const chunks = await streamChunks({ ...request, echo: true });
    expect(chunks[1].choices[0].delta).toEqual({ content: 'Once upon a time' });
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe(echoed.choices[0].message.content);
    // A new assistant turn does not continue the user's message: nothing is echoed.
    const newTurn = { model: MODEL, messages: [{ role: 'user', content: 'Once upon a time' }], temperature: 0, max_tokens: 5 };
    const noEcho = await (await postJson(app, '/v1/chat/completions', { ...newTurn, echo: true })).json();
    expect(noEcho.choices[0].message.content).toBe((await (await postJson(app, '/v1/chat/completions', newTurn)).json()).choices[0].message.content);
  });
});
