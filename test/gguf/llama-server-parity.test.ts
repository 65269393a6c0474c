/**
 * GGUF files served by `npm start` against llama.cpp's server on the same files (the
 * reference: test/worker/llama-server.ts starts it): /tokenize, greedy completions and chat
 * (the file's own template, llama-server --jinja), alone and batched.
 *
 * - tiny-llama-kquants-f32.gguf holds the K-quant file's weights as ggml dequantizes them,
 *   in F32: llama.cpp computes it in float (KV cache f32 too), so every greedy token must
 *   be the same: the graph, RoPE, GQA, untied head and tokenizer are llama.cpp's model.
 * - On the quantized files themselves (Q4_K/Q5_K/Q6_K mixed as in a Q4_K_M file, and
 *   Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/F16/BF16), llama.cpp rounds activations to 8 bits inside
 *   each quantized dot product, so its logits differ from the exact ones by a little: the
 *   greedy text must be the same up to the first near tie: where llama.cpp's token was
 *   within NEAR_TIE nats of our best one in our own log-probabilities. These are served
 *   with the weights kept quantized (MatMulNBits over the file's codes, the default).
 *   (tiny-llama-legacy-quantized.gguf is not here: on it llama.cpp's quantized run departs
 *   from its own F32 run of the same dequantized weights by more than NEAR_TIE, while ours
 *   agrees with that F32 run; test/gguf/quantized-weights.test.ts checks it against the exact graph.)
 * - tiny-llama-bpe.gguf: a byte-level BPE vocabulary (gpt2 model, llama-bpe pre-tokenizer,
 *   ChatML template), F32 weights: tokens equal; greedy text as above (llama.cpp's float
 *   kernels round differently from onnxruntime's: a near tie there may go either way).
 * - tiny-qwen2.gguf: architecture qwen2 (q/k/v biases, NEOX rope, linear rope scaling, qwen2
 *   pre-tokenizer), F32; tiny-llama3-rope-freqs.gguf: Llama 3.1's rope_freqs divisors, F32.
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

const TOKENIZE_TEXTS = [
  'Once upon a time, there was a little girl named Lily.',
  '  two leading spaces and  double  spaces',
  'new\nlines\n\nand tabs\t!',
  '<s>special tokens</s> in <unk> the text',
  'unicode: café, naïve, 日本語, ☃ and 🙂',
  '',
];
const BPE_TOKENIZE_TEXTS = [
  'Hello world',
  "It's late, isn't it?  Two  spaces, they'd say",
  'Once upon a time, there were 12345 dogs and 7 cats.',
  'new\nlines\n\n\tand tabs \n ',
  '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
  'Café 日本語 🙂 naïve',
  '',
];

const cacheDir = mkdtempSync(join(tmpdir(), 'gguf-parity-'));
const F32_KV = ['-ctk', 'f32', '-ctv', 'f32'];

const pairs: Record<string, Pair> = {};

beforeAll(() => startPairs([
  ['tiny-llama-kquants-f32.gguf', F32_KV],
  ['tiny-llama-kquants.gguf', []],
  ['tiny-llama-legacy.gguf', []],
  ['tiny-llama-bpe.gguf', F32_KV],
  ['tiny-qwen2.gguf', F32_KV],
  ['tiny-llama3-rope-freqs.gguf', F32_KV],
], cacheDir, pairs), 240_000);

afterAll(() => stopPairs(pairs, cacheDir));

describe('a GGUF served beside llama-server on the same file', () => {
  it.each([
    ['tiny-llama-kquants.gguf', 'SentencePiece scores, byte fallback', TOKENIZE_TEXTS],
    ['tiny-llama-bpe.gguf', 'byte-level BPE merges, llama-bpe pre-tokenizer', BPE_TOKENIZE_TEXTS],
    ['tiny-qwen2.gguf', 'byte-level BPE merges, qwen2 pre-tokenizer', BPE_TOKENIZE_TEXTS],
  ])('%s: tokenizes as llama.cpp does (%s, special tokens, BOS)', async (file, _kind, texts) => {
    await expectTokenizesAsLlama(pairs[file], texts);
  });

  it('names the architecture, the tensor types and how they run at startup', () => {
    const output = pairs['tiny-llama-kquants.gguf'].ours.output();
    expect(output).toMatch(/GGUF: architecture llama \("tiny-llama-kquants"\), 2 layers, 4 heads \/ 2 key-value heads, rope theta 500000, untied output head/);
    expect(output).toMatch(/GGUF tensors: .*Q4_K ×12.*Q6_K ×3.*Q5_K ×1/);
    // Kept quantized: Q4_K in 4-bit codes with its mins subtracted; Q6_K (16-element scale blocks) as 8-bit codes in blocks of 16.
    expect(output).toMatch(/GGUF Q4_K ×12: .*MatMulNBits\/GatherBlockQuantized, 4-bit codes, block 32, zero points per block, mins subtracted through block sums/);
    expect(output).toMatch(/GGUF Q6_K ×3: .*MatMulNBits\/GatherBlockQuantized, 8-bit codes, block 16(;|\n|$)/m);
    expect(pairs['tiny-llama-kquants-f32.gguf'].ours.output()).toMatch(/GGUF F32 ×\d+: float32 \(float in the file\)/);
    expect(output).toMatch(/GGUF tokenizer: llama \(SentencePiece, byte fallback\), 512 tokens/);
    expect(pairs['tiny-qwen2.gguf'].ours.output()).toMatch(/GGUF: architecture qwen2 .*rope scaling linear/);
    expect(pairs['tiny-llama3-rope-freqs.gguf'].ours.output()).toMatch(/GGUF: architecture llama .*rope scaling llama3-freqs/);
  });

  it('F32 (the K-quant weights as ggml dequantizes them): the same greedy completions, alone and batched', () =>
    expectSameGreedyCompletions(pairs['tiny-llama-kquants-f32.gguf']));

  it('F32: the same greedy chat replies through the file\'s chat template', () => expectSameGreedyChats(pairs['tiny-llama-kquants-f32.gguf']));

  for (const file of ['tiny-llama-kquants.gguf', 'tiny-llama-legacy.gguf', 'tiny-llama-bpe.gguf', 'tiny-qwen2.gguf', 'tiny-llama3-rope-freqs.gguf']) {
    it(`${file}: greedy completions and chat as llama.cpp's up to a near tie, alone and batched`, () => expectGreedyAsLlamaUpToNearTie(pairs[file]));
  }
});
