/**
 * A reasoning model's output through /v1/chat/completions (reasoningParser "qwen3", as
 * `vllm serve --reasoning-parser qwen3`), end to end on a real engine: the tiny Qwen3 GGUF
 * (test/fixtures/gguf/tiny-qwen3.gguf: Qwen3's own chat template, a BPE tokenizer whose
 * `<think>` / `</think>` are added tokens as in Qwen3's). Its random weights do not think,
 * so the output is steered into the `<think>…</think>…` shape with sampling parameters
 * only, under greedy decoding: logit_bias +100 on `<think>` makes it the first token, a
 * bias on `</think>` (the largest of 90, 80, … that lets the model write at least two tokens
 * of its own first) makes it come later, and a huge repetition_penalty pushes each tag
 * down once written, so the model's own tokens follow.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServerConfig } from '../../src/config/server-config.js';
import type { Engine } from '../../src/engine/types.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { postJson, ssePayloads, testApp } from './helpers.js';

const MODEL = 'tiny-qwen3';
let engine: Engine;
/** A chat request whose greedy output is "<think>", thought, "</think>", content; and that text. */
let steered: (extra?: Record<string, unknown>) => Record<string, unknown>;
let thought: string;
let answer: string;

const app = (config: Partial<ServerConfig> = {}) => testApp(engine, { servedModelName: MODEL, ...config });

async function message(body: unknown, config: Partial<ServerConfig> = {}) {
  const response = await postJson(app(config), '/v1/chat/completions', body);
  expect(response.status).toBe(200);
  return (await response.json()).choices[0].message;
}

beforeAll(async () => {
  process.env.GGUF_CACHE_DIR ??= mkdtempSync(join(tmpdir(), 'reasoning-gguf-'));
  engine = await createNodeEngine({ modelDir: 'test/fixtures/gguf/tiny-qwen3.gguf', servedModelName: MODEL });
  const single = (text: string) => {
    const ids = engine.tokenizer.encode(text, { addSpecialTokens: false });
    expect(ids, text).toHaveLength(1);
    return ids[0]!;
  };
  const think = single('<think>');
  const endThink = single('</think>');
  const request = (bias: number) => (extra: Record<string, unknown> = {}) => ({
    model: MODEL,
    messages: [{ role: 'user', content: 'Hello' }],
    temperature: 0,
    max_tokens: 12,
    min_tokens: 12,
    logit_bias: { [think]: 100, [endThink]: bias },
    repetition_penalty: 1000,
    ...extra,
  });
  for (let bias = 90; bias > 0; bias -= 10) {
    const text: string = (await message(request(bias)())).content;
    const match = /^<think>(.+?)<\/think>(.+)$/s.exec(text);
    if (match === null || engine.tokenizer.encode(match[1]!, { addSpecialTokens: false }).length < 2 || match[2]!.includes('think>')) continue;
    steered = request(bias);
    thought = match[1]!;
    answer = match[2]!;
    return;
  }
  throw new Error('no logit_bias on </think> gives the <think>…</think>… shape');
}, 120_000);
afterAll(() => engine.dispose());

describe('reasoningParser qwen3 on /v1/chat/completions', () => {
  it('without a parser the steered output is one text, tags and all', async () => {
    const plain = await message(steered());
    expect(plain.content).toBe(`<think>${thought}</think>${answer}`);
    expect(plain).not.toHaveProperty('reasoning');
  });

  it('splits it: the thought as reasoning, what follows as content, no tag in either', async () => {
    const split = await message(steered(), { reasoningParser: 'qwen3' });
    expect(split.reasoning).toBe(thought);
    expect(split.content).toBe(answer);
  });

  it('deepseek_r1 splits it the same way', async () => {
    const split = await message(steered(), { reasoningParser: 'deepseek_r1' });
    expect({ reasoning: split.reasoning, content: split.content }).toEqual({ reasoning: thought, content: answer });
  });

  it('streams reasoning deltas, then content deltas, never mixed, adding up to the same split', async () => {
    const whole = await message(steered(), { reasoningParser: 'qwen3' });
    const response = await postJson(app({ reasoningParser: 'qwen3' }), '/v1/chat/completions', steered({ stream: true }));
    expect(response.status).toBe(200);
    const chunks = ssePayloads(await response.text()).filter((data) => data !== '[DONE]').map((data) => JSON.parse(data));
    const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice: { delta: Record<string, string> }) => choice.delta));
    const kinds = deltas.filter((d) => d.reasoning !== undefined || (d.content ?? '') !== '').map((d) => (d.reasoning !== undefined ? 'reasoning' : 'content'));
    expect(deltas.every((d) => d.reasoning === undefined || d.content === undefined)).toBe(true);
    expect(kinds.indexOf('content')).toBeGreaterThan(kinds.lastIndexOf('reasoning'));
    expect(deltas.map((d) => d.reasoning ?? '').join('')).toBe(whole.reasoning);
    expect(deltas.map((d) => d.content ?? '').join('')).toBe(whole.content);
  });

  it('include_reasoning false drops the reasoning, keeps the content', async () => {
    const split = await message(steered(), { reasoningParser: 'qwen3' });
    const without = await message(steered({ include_reasoning: false }), { reasoningParser: 'qwen3' });
    expect(without.reasoning).toBeNull();
    expect(without.content).toBe(split.content);
  });

  it('an unfinished thought is all reasoning; enable_thinking false (through chat_template_kwargs) makes the output all content', async () => {
    // No steering: the model's own tokens, with no tag at all.
    const free = { model: MODEL, messages: [{ role: 'user', content: 'Hello' }], temperature: 0, max_tokens: 8, min_tokens: 8 };
    const text: string = (await message(free)).content;
    expect(text).not.toContain('think>');
    const thinking = await message(free, { reasoningParser: 'qwen3' });
    expect({ reasoning: thinking.reasoning, content: thinking.content }).toEqual({ reasoning: text, content: null });
    // The template writes an empty <think></think> into the prompt: the output is the answer.
    const offRequest = { ...free, chat_template_kwargs: { enable_thinking: false } };
    const offText: string = (await message(offRequest)).content;
    const off = await message(offRequest, { reasoningParser: 'qwen3' });
    expect({ reasoning: off.reasoning, content: off.content }).toEqual({ reasoning: null, content: offText });
    // Through /tokenize: the prompt does carry the closed thought.
    const tokenized = await (await postJson(app(), '/tokenize', { model: MODEL, messages: offRequest.messages, chat_template_kwargs: { enable_thinking: false } })).json();
    expect(engine.tokenizer.decode(tokenized.tokens)).toMatch(/<think>\n\n<\/think>\n\n$/);
  });
});
