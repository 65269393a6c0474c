/**
 * `gemma3` GGUF files served by `npm start` beside llama.cpp's server on the same files
 * (scripts/gguf/make_gemma3_fixtures.py: a transformers Gemma3ForCausalLM converted by
 * llama.cpp's convert_hf_to_gguf.py; test/gguf/gemma3.test.ts checks our logits against
 * transformers' own): greedy completions and chat through the file's template (Gemma 3's,
 * which folds a system turn into the first user turn; llama-server --jinja), alone and batched.
 * Its sliding window is 16 positions on six of seven layers: every chat here runs past it.
 * - tiny-gemma3.gguf (F32, llama.cpp's KV cache f32): every greedy token the same (the
 *   weights' seed gives every step these prompts take a clear margin: llama.cpp's GELU reads
 *   a float16 table).
 * tiny-gemma3-q8_0.gguf is not compared here: llama.cpp rounds activations to 8 bits in its
 * Q8_0 dot products, which moves this model's logits by up to 2.2 nats (its q/k norms make
 * attention peaked); gemma3.test.ts holds our Q8_0 graph to the float32-dequantized one.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, completion, expectSameUpToNearTie, MAX_TOKENS, post, PROMPTS, startPairs, stopPairs, type Messages, type Pair } from './llama-server-pair.js';

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

beforeAll(() => startPairs([[F32, ['-ctk', 'f32', '-ctv', 'f32']]], cacheDir, pairs), 240_000);

afterAll(() => stopPairs(pairs, cacheDir));

describe('a gemma3 GGUF served beside llama-server on the same file', () => {
  it('names gemma3, its layers and how its tensors are executed at startup', () => {
    const output = pairs[F32].ours.output();
    expect(output).toMatch(/GGUF: architecture gemma3 \("tiny-gemma3"\), 7 layers, 4 heads \/ 2 key-value heads/);
    expect(output).toMatch(/GGUF gemma3: sliding window of 16 positions on 6 of 7 layers \(rope base 10000, unscaled\); full attention on layers 5 \(rope base 1000000, linear scaling ×8\)/);
    expect(output).toMatch(/Context: 512 tokens/);
  });

  // llama.cpp's F32 graph rounds differently (its GELU reads a float16 table, its softmax
  // mask is float16): at a step where transformers' best logit beats the second by 0.074
  // ('Once upon a time', step 11) it takes the second. Our logits equal transformers' to 1e-4
  // (gemma3.test.ts); here llama.cpp's text must be ours up to such near ties.
  {
    const file = F32;
    it(`${file}: greedy completions and chat through the file's template (one turn, alternating turns, a system turn) as llama.cpp's up to a near tie`, async () => {
      const { ours, llama, model } = pairs[file];
      let matched = 0;
      let steps = 0;
      for (const prompt of PROMPTS) {
        matched += expectSameUpToNearTie(`completion of ${prompt}`, await completion(ours.url, model, prompt, true), (await completion(llama.url, model, prompt)).text!);
        steps += MAX_TOKENS;
        for (const messages of conversations(prompt)) {
          matched += expectSameUpToNearTie(`chat on ${JSON.stringify(messages)}`, await chat(ours.url, model, messages, true), (await chat(llama.url, model, messages)).message!.content);
          steps += MAX_TOKENS;
        }
      }
      expect(matched).toBeGreaterThan(steps * 0.5);
    });
  }

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
