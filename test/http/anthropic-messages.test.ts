/**
 * /v1/messages at the HTTP level: the exact SSE framing and event order, Anthropic's error
 * shape for every kind of refusal (validation, the API key, the body limit, a route's
 * method), x-api-key, and the translation of each content block into the prompt. The SDK's
 * view of the same is test/e2e/anthropic-client.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { MODEL, golden, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const hello = { model: MODEL, messages: [{ role: 'user', content: golden.prompt }], max_tokens: 12, temperature: 0 };

/** The body's events as [name, data], asserting the framing: nothing but `event: <name>\ndata: <json>\n\n`. */
function namedEvents(raw: string): Array<[string, Record<string, unknown>]> {
  expect(raw).toMatch(/^(event: [a-z_]+\ndata: [^\n]+\n\n)*$/);
  return raw
    .split('\n\n')
    .filter((event) => event !== '')
    .map((event) => {
      const [name, data] = event.split('\n');
      const parsed = JSON.parse(data!.slice('data: '.length)) as Record<string, unknown>;
      expect(parsed.type).toBe(name!.slice('event: '.length));
      return [parsed.type as string, parsed];
    });
}

async function expectAnthropicError(response: Response | Promise<Response>, status: number, type: string): Promise<string> {
  const res = await response;
  expect(res.status).toBe(status);
  const body = (await res.json()) as { type: string; error: { type: string; message: string } };
  expect(Object.keys(body).sort()).toEqual(['error', 'type']);
  expect(body.type).toBe('error');
  expect(Object.keys(body.error).sort()).toEqual(['message', 'type']);
  expect(body.error.type).toBe(type);
  return body.error.message;
}

describe('POST /v1/messages', () => {
  it('streams message_start, one text block, message_delta with stop_reason and usage, message_stop', async () => {
    const response = await postJson(testApp(engine), '/v1/messages', { ...hello, stream: true });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = namedEvents(await response.text());
    const names = events.map(([name]) => name);
    expect(names[0]).toBe('message_start');
    expect(names[1]).toBe('content_block_start');
    expect(names.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    const start = events[0]![1].message as { id: string; content: unknown[]; stop_reason: unknown; usage: { input_tokens: number; output_tokens: number } };
    expect(start.id).toMatch(/^msg_/);
    expect(start.content).toEqual([]);
    expect(start.stop_reason).toBeNull();
    expect(start.usage.output_tokens).toBe(0);
    expect(events[1]![1]).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    const text = events
      .filter(([name]) => name === 'content_block_delta')
      .map(([, data]) => (data.delta as { type: string; text: string }).text)
      .join('');
    const whole = (await (await postJson(testApp(engine), '/v1/messages', hello)).json()) as { content: Array<{ text: string }>; usage: { input_tokens: number } };
    expect(text).toBe(whole.content[0]!.text);
    expect(start.usage.input_tokens).toBe(whole.usage.input_tokens);
    const delta = events.at(-2)![1];
    expect(delta).toEqual({ type: 'message_delta', delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { input_tokens: whole.usage.input_tokens, output_tokens: 12 } });
  });

  it('a named tool streams as a tool_use block whose input_json_delta pieces add up to the arguments', async () => {
    const tools = [{ name: 'pick', input_schema: { type: 'object', properties: { n: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['n'] } }];
    const body = { ...hello, max_tokens: 32, tools, tool_choice: { type: 'tool', name: 'pick' } };
    const events = namedEvents(await (await postJson(testApp(engine), '/v1/messages', { ...body, stream: true })).text());
    const start = events.find(([name]) => name === 'content_block_start')![1];
    expect(start.content_block).toMatchObject({ type: 'tool_use', name: 'pick', input: {} });
    const json = events
      .filter(([name, data]) => name === 'content_block_delta' && (data.delta as { type: string }).type === 'input_json_delta')
      .map(([, data]) => (data.delta as { partial_json: string }).partial_json)
      .join('');
    const whole = (await (await postJson(testApp(engine), '/v1/messages', body)).json()) as { content: Array<{ type: string; input: unknown; id: string }>; stop_reason: string };
    expect(whole.stop_reason).toBe('tool_use');
    expect(whole.content).toHaveLength(1);
    expect(JSON.parse(json)).toEqual(whole.content[0]!.input);
    expect((whole.content[0]!.input as { n: number }).n).toBeGreaterThanOrEqual(1);
    expect(events.at(-2)![1].delta).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
  });

  it('renders system, text, tool_use, tool_result and thinking blocks as the chat route renders their chat messages', async () => {
    const anthropic = {
      model: MODEL,
      system: [{ type: 'text', text: 'Be kind.' }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Lily had a cat.' }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: '' },
            { type: 'text', text: 'Let me look.' },
            { type: 'tool_use', id: 'toolu_1', name: 'look', input: { at: 'cat' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'The cat was big.' }] }, { type: 'text', text: 'And then?' }] },
      ],
    };
    const chat = {
      model: MODEL,
      messages: [
        { role: 'system', content: 'Be kind.' },
        { role: 'user', content: 'Lily had a cat.' },
        { role: 'assistant', content: 'Let me look.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'look', arguments: '{"at":"cat"}' } }] },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'The cat was big.' },
        { role: 'user', content: 'And then?' },
      ],
    };
    const counted = (await (await postJson(testApp(engine), '/v1/messages/count_tokens', anthropic)).json()) as { input_tokens: number };
    const tokenized = (await (await postJson(testApp(engine), '/tokenize', chat)).json()) as { count: number };
    expect(counted).toEqual({ input_tokens: tokenized.count });
    const message = (await (await postJson(testApp(engine), '/v1/messages', { ...anthropic, max_tokens: 2 })).json()) as { usage: { input_tokens: number } };
    expect(message.usage.input_tokens).toBe(tokenized.count);
  });
});

describe('errors on /v1/messages are in Anthropic\'s shape', () => {
  it('validation: 400 invalid_request_error naming the field', async () => {
    const app = testApp(engine);
    expect(await expectAnthropicError(postJson(app, '/v1/messages', { ...hello, max_tokens: 0 }), 400, 'invalid_request_error')).toMatch(/^max_tokens/);
    expect(
      await expectAnthropicError(postJson(app, '/v1/messages', { ...hello, messages: [{ role: 'user', content: [{ type: 'video', url: 'x' }] }] }), 400, 'invalid_request_error'),
    ).toMatch(/^messages\[0\]\.content\[0\]/);
    expect(await expectAnthropicError(postJson(app, '/v1/messages', { ...hello, tool_choice: { type: 'tool' } }), 400, 'invalid_request_error')).toMatch(/name/);
    expect(await expectAnthropicError(postJson(app, '/v1/messages', { ...hello, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }), 400, 'invalid_request_error')).toMatch(
      /^tools\[0\]/,
    );
    await expectAnthropicError(postJson(app, '/v1/messages', '{"model": '), 400, 'invalid_request_error');
    await expectAnthropicError(postJson(app, '/v1/messages', { ...hello, model: 'claude-opus-4' }), 404, 'not_found_error');
    await expectAnthropicError(postJson(app, '/v1/messages/count_tokens', { model: MODEL }), 400, 'invalid_request_error');
    await expectAnthropicError(app.request('/v1/messages'), 405, 'invalid_request_error');
  });

  it('a body past maxRequestBytes: 413 request_too_large', async () => {
    const app = testApp(engine, { maxRequestBytes: 1024 });
    await expectAnthropicError(postJson(app, '/v1/messages', { ...hello, system: 'x'.repeat(2000) }), 413, 'request_too_large');
  });

  it('the API key: x-api-key or a bearer token; a wrong or missing one is 401 authentication_error', async () => {
    const app = testApp(engine, { apiKey: 'sk-local-1' });
    const withHeaders = (headers: Record<string, string>) => postJson(app, '/v1/messages', hello, { headers: { 'content-type': 'application/json', ...headers } });
    expect((await withHeaders({ 'x-api-key': 'sk-local-1' })).status).toBe(200);
    expect((await withHeaders({ authorization: 'Bearer sk-local-1' })).status).toBe(200);
    expect((await postJson(app, '/v1/messages/count_tokens', hello, { headers: { 'content-type': 'application/json', 'x-api-key': 'sk-local-1' } })).status).toBe(200);
    await expectAnthropicError(withHeaders({ 'x-api-key': 'sk-local-2' }), 401, 'authentication_error');
    await expectAnthropicError(withHeaders({}), 401, 'authentication_error');
    // OpenAI's routes keep their one way (and their own error shape).
    const chat = await postJson(app, '/v1/chat/completions', { model: MODEL, messages: hello.messages, max_tokens: 2 }, { headers: { 'content-type': 'application/json', 'x-api-key': 'sk-local-1' } });
    expect(chat.status).toBe(401);
    expect(((await chat.json()) as { object: string }).object).toBe('error');
  });
});
