/**
 * GGUF architectures beyond llama served by `npm start` beside llama.cpp's server on the same
 * files (scripts/gguf/make_arch_fixtures.py made them from transformers models with llama.cpp's
 * own converter): /tokenize, greedy completions and chat through the file's template (llama-server
 * --jinja), alone and batched; the startup report names the architecture.
 *
 * - tiny-qwen3.gguf (F32; llama.cpp computes it in float: see FLOAT_ATTENTION): every greedy token the same.
 * - tiny-qwen3-q8_0.gguf (llama.cpp's Q8_0 conversion): llama.cpp rounds activations to 8 bits
 *   in its quantized dot products, so the text is the same up to the first near tie (llama-server-pair.ts).
 * - tiny-phi3.gguf (F32): fused q/k/v and gate/up, LongRoPE, sliding window 1024. llama-server
 *   runs 4 slots of 512 positions (n_ctx_seq 512 > the original 64: long factors); this server
 *   serves 1024 positions (> 64: long factors too). Every greedy token the same.
 * - tiny-phi3-q4.gguf: its matrices requantized (Q4_1 fused q/k/v and gate/up, Q5_0, Q8_0, Q4_0
 *   embedding, Q5_1 head): the same up to the first near tie.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectGreedyAsLlamaUpToNearTie,
  expectSameGreedyChats,
  expectSameGreedyCompletions,
  expectTokenizesAsLlama,
  startPairs,
  stopPairs,
  type Pair,
} from './llama-server-pair.js';

const PHI3_TOKENIZE_TEXTS = [
  'Once upon a time, there was a little girl named Lily.',
  '  two leading spaces and  double  spaces',
  'new\nlines\n\nand tabs\t!',
  '<|user|>\nThe dog<|end|>\n<|assistant|>\n',
  '<s>special tokens</s> in <unk> the text <|endoftext|>',
  'unicode: café, naïve, 日本語, ☃ and 🙂',
  '',
];
const QWEN_TOKENIZE_TEXTS = [
  'Hello world',
  "It's late, isn't it?  Two  spaces, they'd say",
  'Once upon a time, there were 12345 dogs and 7 cats.',
  'new\nlines\n\n\tand tabs \n ',
  '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
  'Café 日本語 🙂 naïve',
  '',
];

/**
 * llama-server's arguments beside the shared ones: an f32 KV cache and no flash attention, so
 * llama.cpp's only rounding beyond float32 is the quantized files' 8-bit activations. (Its
 * defaults, an F16 cache and a CPU flash-attention kernel that rounds through F16, move these
 * random models' log-probabilities by up to ~0.2 nats on tiny-phi3.gguf, ~1 nat on
 * tiny-phi3-q4.gguf's chats, against ~1e-4 without them.)
 */
const FLOAT_ATTENTION = ['-ctk', 'f32', '-ctv', 'f32', '-fa', 'off'];
const FILES = ['tiny-qwen3.gguf', 'tiny-qwen3-q8_0.gguf', 'tiny-phi3.gguf', 'tiny-phi3-q4.gguf'];

const cacheDir = mkdtempSync(join(tmpdir(), 'gguf-arch-parity-'));
const pairs: Record<string, Pair> = {};

beforeAll(() => startPairs(FILES.map((file) => [file, FLOAT_ATTENTION] as const), cacheDir, pairs), 240_000);

afterAll(() => stopPairs(pairs, cacheDir));

describe('GGUF architectures beside llama-server on the same file', () => {
  it.each([
    ['tiny-qwen3.gguf', QWEN_TOKENIZE_TEXTS],
    ['tiny-phi3.gguf', PHI3_TOKENIZE_TEXTS],
  ])('%s: tokenizes as llama.cpp does', async (file, texts) => {
    await expectTokenizesAsLlama(pairs[file], texts);
  });

  it('names the architecture at startup', () => {
    expect(pairs['tiny-qwen3.gguf'].ours.output()).toMatch(/GGUF: architecture qwen3 \("Qwen3"\), 2 layers, 4 heads \/ 2 key-value heads, head size 32, per-head q\/k norms, rope theta 1000000, tied output head/);
    expect(pairs['tiny-qwen3-q8_0.gguf'].ours.output()).toMatch(/GGUF Q8_0 ×\d+: MatMulNBits\/GatherBlockQuantized, 8-bit codes, block 32/);
    const phi3 = pairs['tiny-phi3.gguf'].ours.output();
    expect(phi3).toMatch(/GGUF: architecture phi3 \("Phi3"\), 2 layers, 4 heads \/ 2 key-value heads, rope theta 10000, rope scaling longrope \(long factors: context 1024 > original 64, as llama.cpp chooses per context\), attention factor 1.41421, untied output head/);
    expect(phi3).toMatch(/GGUF context: the file says 4096 positions, served 1024/);
    // The fused matrices stay quantized: Q4_1 in 4-bit codes with its minimums.
    expect(pairs['tiny-phi3-q4.gguf'].ours.output()).toMatch(/GGUF Q4_1 ×4: MatMulNBits\/GatherBlockQuantized, 4-bit codes, block 32, zero points per block, mins subtracted through block sums/);
  });

  for (const file of ['tiny-qwen3.gguf', 'tiny-phi3.gguf']) {
    it(`${file} (F32): the same greedy completions and chat replies, alone and batched`, async () => {
      await expectSameGreedyCompletions(pairs[file]);
      await expectSameGreedyChats(pairs[file]);
    });
  }

  for (const file of ['tiny-qwen3-q8_0.gguf', 'tiny-phi3-q4.gguf']) {
    it(`${file} (quantized): greedy completions and chat as llama.cpp's up to a near tie, alone and batched`, () => expectGreedyAsLlamaUpToNearTie(pairs[file]));
  }
});
