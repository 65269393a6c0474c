import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { MODEL, expectError, loadEngine, postJson, ssePayloads, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const WEATHER = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer', minimum: 1, maximum: 7 } },
  required: ['city', 'days'],
  additionalProperties: false,
};
const TIME = { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'], additionalProperties: false };
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather forecast', parameters: WEATHER } },
  { type: 'function', function: { name: 'get_time', parameters: TIME } },
];
const ajv = new Ajv2020({ strict: true });
const validators: Record<string, ReturnType<typeof ajv.compile>> = { get_weather: ajv.compile(WEATHER), get_time: ajv.compile(TIME) };
const chat = { model: MODEL, messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools, temperature: 1 };
const named = { type: 'function', function: { name: 'get_weather' } };

interface ToolCallOut {
  id: string;
  type: string;
  function: { name: string; arguments: string };
}

function expectValidCall(call: ToolCallOut): void {
  expect(call.type).toBe('function');
  expect(call.id).toMatch(/^chatcmpl-tool-[0-9a-f]{32}$/);
  expect(validators[call.function.name]!(JSON.parse(call.function.arguments))).toBe(true);
}

/** Adds streamed chunks up the way OpenAI clients do. */
async function streamedMessage(response: Response) {
  const payloads = ssePayloads(await response.text());
  expect(payloads.at(-1)).toBe('[DONE]');
  const calls: ToolCallOut[] = [];
  let content = '';
  let finish: string | null = null;
  for (const payload of payloads.slice(0, -1)) {
    const choice = JSON.parse(payload).choices[0];
    if (!choice) continue;
    content += choice.delta.content ?? '';
    for (const delta of choice.delta.tool_calls ?? []) {
      if (delta.id !== undefined) {
        expect(delta.index).toBe(calls.length);
        calls.push({ id: delta.id, type: delta.type, function: { name: delta.function.name, arguments: delta.function.arguments ?? '' } });
      } else {
        calls[delta.index]!.function.arguments += delta.function.arguments;
      }
    }
    finish = choice.finish_reason ?? finish;
  }
  return { content, calls, finish };
}

describe('tool_choice named and "required" (served through structured output)', () => {
  it('named: one call of that function, arguments valid for its schema, finish_reason "stop" (vLLM)', async () => {
    for (const seed of [1, 2, 3]) {
      const body = await (await postJson(testApp(engine), '/v1/chat/completions', { ...chat, tool_choice: named, seed })).json();
      const { message, finish_reason } = body.choices[0];
      expect(message.content).toBeNull();
      expect(message.tool_calls).toHaveLength(1);
      expect(message.tool_calls[0].function.name).toBe('get_weather');
      expectValidCall(message.tool_calls[0]);
      expect(finish_reason).toBe('stop');
    }
  });

  it('named, streamed: id and name first, argument fragments adding up to the non-streamed call', async () => {
    const app = testApp(engine);
    const whole = await (await postJson(app, '/v1/chat/completions', { ...chat, tool_choice: named, seed: 5 })).json();
    const streamed = await streamedMessage(await postJson(app, '/v1/chat/completions', { ...chat, tool_choice: named, seed: 5, stream: true }));
    expect(streamed.calls).toHaveLength(1);
    expect(streamed.calls[0]!.function).toEqual(whole.choices[0].message.tool_calls[0].function);
    expect(streamed.content).toBe('');
    expect(streamed.finish).toBe('stop');
  });

  it('"required": calls of the listed tools, each valid, finish_reason "tool_calls"; one call with parallel_tool_calls false', async () => {
    const app = testApp(engine);
    const single = await (await postJson(app, '/v1/chat/completions', { ...chat, tool_choice: 'required', parallel_tool_calls: false, seed: 3 })).json();
    expect(single.choices[0].message.tool_calls).toHaveLength(1);
    expectValidCall(single.choices[0].message.tool_calls[0]);
    expect(single.choices[0].finish_reason).toBe('tool_calls');

    const several = await (await postJson(app, '/v1/chat/completions', { ...chat, tool_choice: 'required', max_tokens: 150, seed: 1 })).json();
    const calls: ToolCallOut[] = several.choices[0].message.tool_calls;
    expect(calls.length).toBeGreaterThanOrEqual(2);
    // Cut by max_tokens: every call but the last is whole.
    for (const call of calls.slice(0, -1)) expectValidCall(call);
    expect(new Set(calls.map((call) => call.id)).size).toBe(calls.length);
  });

  it('"required", streamed: the same calls as non-streamed', async () => {
    const app = testApp(engine);
    const request = { ...chat, tool_choice: 'required', parallel_tool_calls: false, seed: 4 };
    const whole = await (await postJson(app, '/v1/chat/completions', request)).json();
    const streamed = await streamedMessage(await postJson(app, '/v1/chat/completions', { ...request, stream: true }));
    expect(streamed.calls.map((call) => call.function)).toEqual(whole.choices[0].message.tool_calls.map((call: ToolCallOut) => call.function));
    expect(streamed.finish).toBe('tool_calls');
  });

  it('with n = 2, streamed: each choice has its own call, announced once, as its non-streamed choice', async () => {
    const app = testApp(engine);
    const request = { ...chat, tool_choice: named, n: 2, seed: 9 };
    const whole = await (await postJson(app, '/v1/chat/completions', request)).json();
    const payloads = ssePayloads(await (await postJson(app, '/v1/chat/completions', { ...request, stream: true })).text());
    const calls: Record<number, { id?: string; arguments: string; announced: number }> = {};
    for (const payload of payloads.slice(0, -1)) {
      for (const choice of JSON.parse(payload).choices) {
        for (const delta of choice.delta.tool_calls ?? []) {
          const call = (calls[choice.index] ??= { arguments: '', announced: 0 });
          if (delta.id !== undefined) {
            call.id = delta.id;
            call.announced++;
          }
          call.arguments += delta.function.arguments ?? '';
        }
      }
    }
    for (const index of [0, 1]) {
      expect(calls[index]!.announced).toBe(1);
      expect(calls[index]!.arguments).toBe(whole.choices[index].message.tool_calls[0].function.arguments);
    }
    expect(calls[0]!.id).not.toBe(calls[1]!.id);
  });

  it('refuses tool calls combined with another structured-output constraint', async () => {
    const message = await expectError(
      postJson(testApp(engine), '/v1/chat/completions', { ...chat, tool_choice: 'required', response_format: { type: 'json_object' } }),
      400,
      'BadRequestError',
      'tool_choice',
    );
    expect(message).toContain('response_format');
  });

  it("refuses a tool whose parameters use a JSON Schema keyword the compiler lacks, naming it", async () => {
    const bad = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { d: { type: 'string', format: 'date' } } } } }];
    const message = await expectError(postJson(testApp(engine), '/v1/chat/completions', { ...chat, tools: bad, tool_choice: 'required' }), 400, 'BadRequestError', 'tools');
    expect(message).toContain("'format'");
  });
});

describe('tool_choice "auto"', () => {
  it('without a tool-call parser: a 400 naming the setting', async () => {
    const message = await expectError(postJson(testApp(engine), '/v1/chat/completions', chat), 400, 'BadRequestError', 'tool_choice');
    expect(message).toContain('toolCallParser');
  });

  it('with a parser, text that holds no call is the content (streamed the same)', async () => {
    const app = testApp(engine, { toolCallParser: 'hermes' });
    const request = { ...chat, temperature: 0, max_tokens: 20 };
    const whole = await (await postJson(app, '/v1/chat/completions', request)).json();
    const plain = await (await postJson(testApp(engine), '/v1/chat/completions', { ...request, tools: undefined })).json();
    expect(whole.choices[0].message).toEqual({ role: 'assistant', content: plain.choices[0].message.content, tool_calls: [] });
    expect(whole.choices[0].finish_reason).toBe(plain.choices[0].finish_reason);
    const streamed = await streamedMessage(await postJson(app, '/v1/chat/completions', { ...request, stream: true }));
    expect(streamed).toEqual({ content: plain.choices[0].message.content, calls: [], finish: plain.choices[0].finish_reason });
  });
});

describe('tool calls and results in the history', () => {
  it('reach the chat template: assistant tool_calls, then the tool message with its tool_call_id', async () => {
    const template =
      "{% for m in messages %}{% if m.tool_calls %}{% for c in m.tool_calls %}CALL {{ c.id }} {{ c.function.name }} {{ c.function.arguments|tojson }}\n{% endfor %}{% elif m.role == 'tool' %}RESULT {{ m.tool_call_id }} {{ m.content }}\n{% else %}{{ m.content }}\n{% endif %}{% endfor %}";
    const messages = [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","days":1}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ];
    // Arguments reach the template decoded (vLLM's preparation), so tojson writes them in Python's json.dumps spacing.
    const expected = 'Weather in Paris?\nCALL call_1 get_weather {"city": "Paris", "days": 1}\nRESULT call_1 sunny\n';
    const body = await (
      await postJson(testApp(engine, { trustRequestChatTemplate: true }), '/v1/chat/completions', { model: MODEL, messages, tools, tool_choice: 'none', chat_template: template, max_tokens: 1 })
    ).json();
    expect(body.usage.prompt_tokens).toBe(engine.tokenizer.encode(expected, { addSpecialTokens: false }).length);
    const tokenized = await (await postJson(testApp(engine, { trustRequestChatTemplate: true }), '/tokenize', { model: MODEL, messages, chat_template: template, add_generation_prompt: false })).json();
    expect(tokenized.count ?? tokenized.tokens.length).toBe(body.usage.prompt_tokens);
  });
});
