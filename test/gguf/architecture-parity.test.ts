/**
 * GGUF architectures beyond llama served by `npm start` beside llama.cpp's server on the same
 * files (scripts/gguf/make_arch_fixtures.py made them from transformers models with llama.cpp's
 * own converter): /tokenize, greedy completions and chat through the file's template (llama-server
 * --jinja), alone and batched; the startup report names the architecture.
 *
 * - tiny-qwen3.gguf (F32; llama.cpp computes it in float, KV cache f32): every greedy token the same.
 * - tiny-qwen3-q8_0.gguf (llama.cpp's Q8_0 conversion): llama.cpp rounds activations to 8 bits
 *   in its quantized dot products, so the text is the same up to the first near tie (llama-server-pair.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ggufModelFolder } from '../../src/gguf/node-gguf.js';
import { chat, completion, expectSameUpToNearTie, FIXTURES, llamaChatGenerated, MAX_TOKENS, post, PROMPTS, startPair, type Pair } from './llama-server-pair.js';

const QWEN_TOKENIZE_TEXTS = [
  'Hello world',
  "It's late, isn't it?  Two  spaces, they'd say",
  'Once upon a time, there were 12345 dogs and 7 cats.',
  'new\nlines\n\n\tand tabs \n ',
  '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
  'Café 日本語 🙂 naïve',
  '',
];

/** file → llama-server's extra arguments (float KV cache for the F32 files). */
const FILES: Record<string, string[]> = {
  'tiny-qwen3.gguf': ['-ctk', 'f32', '-ctv', 'f32'],
  'tiny-qwen3-q8_0.gguf': [],
};

const cacheDir = mkdtempSync(join(tmpdir(), 'gguf-arch-parity-'));
const pairs: Record<string, Pair> = {};

beforeAll(async () => {
  // Graphs built one at a time here; the servers started together below reuse them.
  process.env.GGUF_CACHE_DIR = cacheDir;
  for (const file of Object.keys(FILES)) await ggufModelFolder(join(FIXTURES, file));
  delete process.env.GGUF_CACHE_DIR;
  const started = await Promise.allSettled(Object.entries(FILES).map(([file, args]) => startPair(file, cacheDir, args)));
  for (const result of started) if (result.status === 'fulfilled') pairs[result.value.model] = result.value;
  const failed = started.find((result) => result.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
}, 240_000);

afterAll(async () => {
  await Promise.all(Object.values(pairs).flatMap((pair) => [pair.ours.stop(), pair.llama.stop()]));
  rmSync(cacheDir, { recursive: true, force: true });
});

describe('GGUF architectures beside llama-server on the same file', () => {
  it.each([['tiny-qwen3.gguf', QWEN_TOKENIZE_TEXTS]])('%s: tokenizes as llama.cpp does', async (file, texts) => {
    const { ours, llama, model } = pairs[file];
    for (const text of texts) {
      const theirs = (await post(llama.url, '/tokenize', { content: text, add_special: true, parse_special: true })).tokens;
      const mine = (await post(ours.url, '/tokenize', { model, prompt: text })).tokens;
      expect({ text, tokens: mine }).toEqual({ text, tokens: theirs });
    }
  });

  it('names the architecture at startup', () => {
    expect(pairs['tiny-qwen3.gguf'].ours.output()).toMatch(/GGUF: architecture qwen3 \("Qwen3"\), 2 layers, 4 heads \/ 2 key-value heads, head size 32, per-head q\/k norms, rope theta 1000000, tied output head/);
    expect(pairs['tiny-qwen3-q8_0.gguf'].ours.output()).toMatch(/GGUF Q8_0 ×\d+: MatMulNBits\/GatherBlockQuantized, 8-bit codes, block 32/);
  });

  for (const file of ['tiny-qwen3.gguf']) {
    it(`${file} (F32): the same greedy completions and chat replies, alone and batched`, async () => {
      const { ours, llama, model } = pairs[file];
      const reference = await Promise.all(PROMPTS.map(async (prompt) => (await completion(llama.url, model, prompt)).text));
      expect(new Set(reference).size).toBe(PROMPTS.length);
      const alone: string[] = [];
      for (const prompt of PROMPTS) alone.push((await completion(ours.url, model, prompt)).text!);
      expect(alone).toEqual(reference);
      const batched = await Promise.all(PROMPTS.map(async (prompt) => (await completion(ours.url, model, prompt)).text));
      expect(batched).toEqual(reference);
      const theirChats = await Promise.all(PROMPTS.map((prompt) => llamaChatGenerated(llama.url, model, prompt)));
      const ourChats = await Promise.all(PROMPTS.map(async (prompt) => (await chat(ours.url, model, prompt)).message!.content));
      expect(ourChats).toEqual(theirChats);
    });
  }

  for (const file of ['tiny-qwen3-q8_0.gguf']) {
    it(`${file} (quantized): greedy completions and chat as llama.cpp's up to a near tie, alone and batched`, async () => {
      const { ours, llama, model } = pairs[file];
      let matched = 0;
      for (const prompt of PROMPTS) {
        const theirs = (await completion(llama.url, model, prompt)).text!;
        matched += expectSameUpToNearTie(`completion of ${prompt}`, await completion(ours.url, model, prompt, true), theirs);
        const theirChat = await llamaChatGenerated(llama.url, model, prompt);
        matched += expectSameUpToNearTie(`chat on ${prompt}`, await chat(ours.url, model, prompt, true), theirChat);
      }
      expect(matched).toBeGreaterThan(PROMPTS.length * 2 * MAX_TOKENS * 0.5);
      const alone = await Promise.all(PROMPTS.map(async (prompt) => (await completion(ours.url, model, prompt)).text));
      const batched = await Promise.all(PROMPTS.map(async (prompt) => (await completion(ours.url, model, prompt)).text));
      expect(batched).toEqual(alone);
    });
  }
});
