/**
 * Reasoning and tool calls together, in the serving layer (the deltas an engine emits →
 * vLLM's response shapes): a call written inside the thought is reasoning, not a call;
 * the calls are read from the content after `</think>` only, streamed and not. (The
 * engine side is tested end to end in reasoning.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import type { GenerationDelta } from '../../src/engine/types.js';
import { chatNonStreaming, chatStream, type ChatJob } from '../../src/http/serving/chat.js';
import { chatReasoning } from '../../src/http/serving/reasoning.js';
import { toolCalling } from '../../src/tools/tool-choice.js';

const THOUGHT = '\nI could write <tool_call>{"name": "get_time", "arguments": {}}</tool_call> but the weather is asked.\n';
const CONTENT = '\n\nLet me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const OUTPUT = `<think>${THOUGHT}</think>${CONTENT}`;

/** The output as an engine streams it: a few characters per step. */
async function* deltas(text: string, step = 3): AsyncGenerator<GenerationDelta> {
  for (let at = 0; at < text.length; at += step) {
    const last = at + step >= text.length;
    yield { index: 0, tokenIds: [at], logprobs: [NaN], text: text.slice(at, at + step), finishReason: last ? 'stop' : null, stopReason: null };
  }
}

const tools = [
  { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
  { type: 'function' as const, function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
];

function job(chatTemplateKwargs?: Record<string, unknown>): ChatJob {
  return {
    id: 'chatcmpl-1',
    model: 'm',
    promptTokenCount: 3,
    role: 'assistant',
    usage: { includeUsage: false, continuousUsage: false },
    tools: toolCalling({ tools, tool_choice: 'auto' }, 'hermes'),
    reasoning: chatReasoning('qwen3', { chat_template_kwargs: chatTemplateKwargs, include_reasoning: true }, '<|im_start|>assistant\n', false),
  };
}

describe('tool calls with a reasoning parser', () => {
  it('non-streaming: the call inside the thought stays reasoning; the one after it is the call', async () => {
    const response = await chatNonStreaming(deltas(OUTPUT), job());
    const { message, finish_reason } = response.choices[0]!;
    expect(message.reasoning).toBe(THOUGHT);
    expect(message.content).toBe('\n\nLet me look.\n');
    expect(message.tool_calls.map((call) => [call.function.name, JSON.parse(call.function.arguments)])).toEqual([['get_weather', { city: 'Paris' }]]);
    expect(finish_reason).toBe('tool_calls');
  });

  it('streaming: the same split, reasoning deltas first, the call as tool_calls deltas', async () => {
    const chunks: Array<{ choices: Array<{ delta: { reasoning?: string; content?: string; tool_calls?: Array<{ function: { name?: string; arguments?: string } }> }; finish_reason: string | null }> }> = [];
    for await (const payload of chatStream(deltas(OUTPUT), job())) if (payload !== '[DONE]') chunks.push(JSON.parse(payload));
    const all = chunks.flatMap((chunk) => chunk.choices);
    expect(all.map((choice) => choice.delta.reasoning ?? '').join('')).toBe(THOUGHT);
    expect(all.map((choice) => choice.delta.content ?? '').join('')).toBe('\n\nLet me look.\n');
    const calls = all.flatMap((choice) => choice.delta.tool_calls ?? []);
    expect(calls[0]!.function.name).toBe('get_weather');
    expect(JSON.parse(calls.map((call) => call.function.arguments ?? '').join(''))).toEqual({ city: 'Paris' });
    expect(all.at(-1)!.finish_reason).toBe('tool_calls');
    const firstContent = all.findIndex((choice) => (choice.delta.content ?? '') !== '' || choice.delta.tool_calls !== undefined);
    expect(all.slice(firstContent).every((choice) => choice.delta.reasoning === undefined)).toBe(true);
  });

  it('Qwen3.5 style: a <tool_call> in an unclosed thought ends it, and is parsed as a call', async () => {
    const output = 'I need the weather.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>';
    const response = await chatNonStreaming(deltas(output), job());
    const { message } = response.choices[0]!;
    expect(message.reasoning).toBe('I need the weather.\n');
    expect(message.tool_calls.map((call) => call.function.name)).toEqual(['get_weather']);
  });
});
