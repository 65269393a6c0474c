/**
 * `gemma3` GGUF files served by `npm start` beside llama.cpp's server on the same files
 * (scripts/gguf/make_gemma3_fixtures.py: a transformers Gemma3ForCausalLM converted by
 * llama.cpp's convert_hf_to_gguf.py; test/gguf/gemma3.test.ts checks our logits against
 * transformers' own): greedy completions and chat through the file's template (Gemma 3's,
 * which folds a system turn into the first user turn; llama-server --jinja), alone and batched.
 * Its sliding window is 16 positions on six of seven layers: every chat here runs past it.
 * - tiny-gemma3.gguf (F32; llama.cpp's KV cache f32 and flash attention off, whose kernel
 *   rounds through F16: with it on, llama.cpp takes the second token where transformers'
 *   margin is 0.074, 'Once upon a time' step 11): every greedy token the same.
 * tiny-gemma3-q8_0.gguf is not compared here: llama.cpp rounds activations to 8 bits in its
 * Q8_0 dot products, which moves this model's logits by up to 2.2 nats (its q/k norms make
 * attention peaked); gemma3.test.ts holds our Q8_0 graph to the float32-dequantized one.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, completion, expectSameGreedyCompletions, post, PROMPTS, startPairs, stopPairs, type Messages, type Pair } from './llama-server-pair.js';

const F32 = 'tiny-gemma3.gguf';

/** One user turn, alternating turns, and a system turn (Gemma 3's template folds it into the first user turn). */
const conversations = (prompt: string): Messages[] => [
  [{ role: 'user', content: prompt }],
  [
    { role: 'user', content: 'Tell me a story.' },
    { role: 'assistant', content: 'Once upon a time' },
    { role: 'user', content: prompt },
  ],
  [
    { role: 'system', content: 'Answer briefly.' },
    { role: 'user', content: prompt },
  ],
];

const cacheDir = mkdtempSync(join(tmpdir(), 'gguf-gemma3-parity-'));
const pairs: Record<string, Pair> = {};

beforeAll(() => startPairs([[F32, ['-ctk', 'f32', '-ctv', 'f32', '-fa', 'off']]], cacheDir, pairs), 240_000);

afterAll(() => stopPairs(pairs, cacheDir));

describe('a gemma3 GGUF served beside llama-server on the same file', () => {
  it('names gemma3, its layers and how its tensors are executed at startup', () => {
    const output = pairs[F32].ours.output();
    expect(output).toMatch(/GGUF: architecture gemma3 \("tiny-gemma3"\), 7 layers, 4 heads \/ 2 key-value heads/);
    expect(output).toMatch(/GGUF gemma3: sliding window of 16 positions on 6 of 7 layers \(rope base 10000, unscaled\); full attention on layers 5 \(rope base 1000000, linear scaling ×8\)/);
    expect(output).toMatch(/Context: 512 tokens/);
  });

  it('the same greedy completions, alone and batched', async () => {
    await expectSameGreedyCompletions(pairs[F32]);
  });

  it("the same greedy chat replies through the file's template (one turn, alternating turns, a system turn)", async () => {
    const { ours, llama, model } = pairs[F32];
    const all = PROMPTS.flatMap(conversations);
    const reference: string[] = [];
    for (const messages of all) reference.push((await chat(llama.url, model, messages)).message!.content);
    const mine: string[] = [];
    for (const messages of all) mine.push((await chat(ours.url, model, messages)).message!.content);
    expect(mine).toEqual(reference);
  });

  it('batched equals alone: completions and chats sent at once give the texts each gives alone', async () => {
    const { ours, model } = pairs[F32];
    const chats = PROMPTS.flatMap(conversations);
    const usage = (await post(ours.url, '/v1/chat/completions', { model, messages: chats[1], max_tokens: 1 })).usage as { prompt_tokens: number };
    expect(usage.prompt_tokens).toBeGreaterThan(16);
    const alone: string[] = [];
    for (const prompt of PROMPTS) alone.push((await completion(ours.url, model, prompt)).text!);
    for (const messages of chats) alone.push((await chat(ours.url, model, messages)).message!.content);
    const batched = await Promise.all([
      ...PROMPTS.map(async (prompt) => (await completion(ours.url, model, prompt)).text!),
      ...chats.map(async (messages) => (await chat(ours.url, model, messages)).message!.content),
    ]);
    expect(batched).toEqual(alone);
  });
});
