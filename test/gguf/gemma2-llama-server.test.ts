/**
 * `gemma2` GGUF files served by `npm start` beside llama.cpp's server on the same files
 * (scripts/gguf/make_gemma2_fixtures.py: a transformers Gemma2ForCausalLM converted by
 * llama.cpp's convert_hf_to_gguf.py; test/gguf/gemma2.test.ts checks our logits against
 * transformers' own): /tokenize (Gemma's SentencePiece vocabulary, no space prefix, turn
 * tokens), greedy completions and chat through the file's template (llama-server --jinja),
 * alone and batched.
 * Its sliding window is 16 positions: every prompt and generation here runs past it.
 * - tiny-gemma2.gguf (F32, llama.cpp's KV cache f32): every greedy token the same. The weights'
 *   seed was chosen so that transformers' best token beats the second by a clear margin at
 *   every step these prompts take (llama.cpp's GELU reads a float16 table: a near tie could
 *   go either way, and would make the comparison a coin toss).
 * - tiny-gemma2-q8_0.gguf: llama.cpp rounds activations to 8 bits in its Q8_0 dot products,
 *   we keep them float32 (MatMulNBits over the file's codes): the same text up to a near tie.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chat,
  completion,
  expectSameGreedyCompletions,
  expectSameUpToNearTie,
  expectTokenizesAsLlama,
  MAX_TOKENS,
  post,
  PROMPTS,
  startPairs,
  stopPairs,
  type Messages,
  type Pair,
} from './llama-server-pair.js';

const F32 = 'tiny-gemma2.gguf';
const Q8_0 = 'tiny-gemma2-q8_0.gguf';
const TOKENIZE_TEXTS = [
  'Once upon a time, there was a little girl named Lily.',
  '  two leading spaces and  double  spaces',
  'new\nlines\n\nand tabs\t!',
  '<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n',
  '<bos>special<eos> tokens <pad> in <unk> the text',
  'unicode: café, naïve, 日本語, ☃ and 🙂',
  'digits 12345 and 2026',
  '',
];

/** Gemma's template has no system role: a user turn, or turns that alternate. */
const conversations = (prompt: string): Messages[] => [
  [{ role: 'user', content: prompt }],
  [
    { role: 'user', content: 'Tell me a story.' },
    { role: 'assistant', content: 'Once upon a time' },
    { role: 'user', content: prompt },
  ],
];

const cacheDir = mkdtempSync(join(tmpdir(), 'gguf-gemma2-parity-'));
const pairs: Record<string, Pair> = {};

beforeAll(() => startPairs([[F32, ['-ctk', 'f32', '-ctv', 'f32']], [Q8_0, []]], cacheDir, pairs), 240_000);

afterAll(() => stopPairs(pairs, cacheDir));

describe('a gemma2 GGUF served beside llama-server on the same file', () => {
  it('tokenizes as llama.cpp does (SentencePiece without a space prefix, byte fallback, turn tokens, BOS)', async () => {
    await expectTokenizesAsLlama(pairs[F32], TOKENIZE_TEXTS);
  });

  it('names gemma2, its limits and how its tensors are executed at startup', () => {
    const output = pairs[F32].ours.output();
    expect(output).toMatch(/GGUF: architecture gemma2 \("tiny-gemma2"\), 4 layers, 4 heads \/ 2 key-value heads/);
    expect(output).toMatch(/GGUF gemma2: .*attention logits soft-capped at 20, final logits at 30, 4 heads of 32/);
    expect(output).toMatch(/GGUF gemma2: sliding window of 16 positions on layers 0, 2 \(of 4\), full attention on the others/);
    expect(output).toMatch(/Context: 512 tokens/);
    expect(output).toMatch(/GGUF F32 ×46: float32 \(float in the file\)/);
    const quantized = pairs[Q8_0].ours.output();
    expect(quantized).toMatch(/GGUF tensors: .*Q8_0 ×29/);
    expect(quantized).toMatch(/GGUF Q8_0 ×29: MatMulNBits\/GatherBlockQuantized, 8-bit codes, block 32/);
  });

  it('F32: the same greedy completions, alone and batched', async () => {
    await expectSameGreedyCompletions(pairs[F32]);
  });

  it("F32: the same greedy chat replies through the file's template (one turn, and alternating turns), alone and batched", async () => {
    const { ours, llama, model } = pairs[F32];
    const all = PROMPTS.flatMap(conversations);
    const usage = (await post(ours.url, '/v1/chat/completions', { model, messages: all[1], max_tokens: 1 })).usage as { prompt_tokens: number };
    expect(usage.prompt_tokens).toBeGreaterThan(2 * 16);
    const reference: string[] = [];
    for (const messages of all) reference.push((await chat(llama.url, model, messages)).message!.content);
    const alone: string[] = [];
    for (const messages of all) alone.push((await chat(ours.url, model, messages)).message!.content);
    expect(alone).toEqual(reference);
    const batched = await Promise.all(all.map(async (messages) => (await chat(ours.url, model, messages)).message!.content));
    expect(batched).toEqual(reference);
  });

  it("Q8_0: greedy completions and chat as llama.cpp's up to a near tie; batched equals alone", async () => {
    const { ours, llama, model } = pairs[Q8_0];
    let matched = 0;
    for (const prompt of PROMPTS) {
      matched += expectSameUpToNearTie(`completion of ${prompt}`, await completion(ours.url, model, prompt, true), (await completion(llama.url, model, prompt)).text!);
      const [messages] = conversations(prompt);
      matched += expectSameUpToNearTie(`chat on ${prompt}`, await chat(ours.url, model, messages, true), (await chat(llama.url, model, messages)).message!.content);
    }
    expect(matched).toBeGreaterThan(PROMPTS.length * 2 * MAX_TOKENS * 0.5);
    const alone: string[] = [];
    for (const prompt of PROMPTS) alone.push((await completion(ours.url, model, prompt)).text!);
    const batched = await Promise.all(PROMPTS.map(async (prompt) => (await completion(ours.url, model, prompt)).text));
    expect(batched).toEqual(alone);
  });

  it("refuses a system turn with a 400: Gemma's template raises (llama-server folds it into the user turn instead)", async () => {
    const { ours, model } = pairs[F32];
    const system = await fetch(`${ours.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }], max_tokens: 4 }),
    });
    expect(system.status).toBe(400);
    expect(JSON.stringify(await system.json())).toMatch(/System role not supported/);
  });
});
