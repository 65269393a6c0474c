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
import { describe, expect, it } from 'vitest';
import { chat as chatWith, completion, expectSameGreedyCompletions, expectSameTokens, expectSameUpToNearTie, F32_KV, MAX_TOKENS, pairsFor } from './llama-server-pair.js';

const PROMPTS = ['Once upon a time', 'The little dog', 'Lily and Tom went to the park. They', 'One day, a big'];
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

const chatMessages = (prompt: string) => [
  { role: 'system', content: 'You tell short stories.' },
  { role: 'user', content: prompt },
];
const chat = (url: string, model: string, prompt: string, logprobs = false) => chatWith(url, model, chatMessages(prompt), logprobs);

const pairs = pairsFor([
  { file: 'tiny-llama-kquants-f32.gguf', llamaArgs: F32_KV },
  { file: 'tiny-llama-kquants.gguf' },
  { file: 'tiny-llama-legacy.gguf' },
  { file: 'tiny-llama-bpe.gguf', llamaArgs: F32_KV },
  { file: 'tiny-qwen2.gguf', llamaArgs: F32_KV },
  { file: 'tiny-llama3-rope-freqs.gguf', llamaArgs: F32_KV },
]);

describe('a GGUF served beside llama-server on the same file', () => {
  it.each([
    ['tiny-llama-kquants.gguf', 'SentencePiece scores, byte fallback', TOKENIZE_TEXTS],
    ['tiny-llama-bpe.gguf', 'byte-level BPE merges, llama-bpe pre-tokenizer', BPE_TOKENIZE_TEXTS],
    ['tiny-qwen2.gguf', 'byte-level BPE merges, qwen2 pre-tokenizer', BPE_TOKENIZE_TEXTS],
  ])('%s: tokenizes as llama.cpp does (%s, special tokens, BOS)', async (file, _kind, texts) => {
    await expectSameTokens(pairs[file], texts);
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

  it('F32 (the K-quant weights as ggml dequantizes them): the same greedy completions, alone and batched', async () => {
    await expectSameGreedyCompletions(pairs['tiny-llama-kquants-f32.gguf'], PROMPTS);
  });

  it('F32: the same greedy chat replies through the file\'s chat template', async () => {
    const { ours, llama, model } = pairs['tiny-llama-kquants-f32.gguf'];
    const reference = await Promise.all(PROMPTS.map(async (prompt) => (await chat(llama.url, model, prompt)).message!.content));
    const mine = await Promise.all(PROMPTS.map(async (prompt) => (await chat(ours.url, model, prompt)).message!.content));
    expect(mine).toEqual(reference);
  });

  for (const file of ['tiny-llama-kquants.gguf', 'tiny-llama-legacy.gguf', 'tiny-llama-bpe.gguf', 'tiny-qwen2.gguf', 'tiny-llama3-rope-freqs.gguf']) {
    it(`${file}: greedy completions and chat as llama.cpp's up to a near tie, alone and batched`, async () => {
      const { ours, llama, model } = pairs[file];
      let matched = 0;
      for (const prompt of PROMPTS) {
        const theirs = (await completion(llama.url, model, prompt)).text!;
        matched += expectSameUpToNearTie(`completion of ${prompt}`, await completion(ours.url, model, prompt, true), theirs);
        const theirChat = (await chat(llama.url, model, prompt)).message!.content;
        matched += expectSameUpToNearTie(`chat on ${prompt}`, await chat(ours.url, model, prompt, true), theirChat);
      }
      // Most tokens agree: a near tie is rare.
      expect(matched).toBeGreaterThan(PROMPTS.length * 2 * MAX_TOKENS * 0.5);
      const alone = await Promise.all(PROMPTS.map(async (prompt) => (await completion(ours.url, model, prompt)).text));
      const batched = await Promise.all(PROMPTS.map(async (prompt) => (await completion(ours.url, model, prompt)).text));
      expect(batched).toEqual(alone);
    });
  }
});
