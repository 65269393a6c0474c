/**
 * Mixture-of-experts GGUFs served by `npm start` beside llama.cpp's server on the same file
 * (scripts/gguf/make_moe_fixtures.py; mixture-of-experts.test.ts checks our logits against
 * transformers'): greedy completions and chat through each file's template, alone and batched.
 * llama-server with an f32 KV cache and flash attention off (architecture-parity.test.ts says
 * why): its build_moe_ffn (and qwen2moe's shared expert) against onnxruntime's MoE kernel.
 * Not the Q8_0 file: llama.cpp rounds activations to 8 bits in its Q8_0 dot products (we keep
 * them float32), which moved this peaked model's 21st token of 'Once upon a time' to one
 * outside our top 5; mixture-of-experts.test.ts holds that file against transformers on
 * ggml's dequantization of it instead.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSameGreedyChats, expectSameGreedyCompletions, startPairs, stopPairs, type Pair } from './llama-server-pair.js';

const EXACT = [
  ['tiny-qwen3moe.gguf', /GGUF: architecture qwen3moe .*per-head q\/k norms, 8 experts of width 32 \(top 2, renormalised\)/],
  ['tiny-qwen2moe.gguf', /GGUF: architecture qwen2moe .*8 experts of width 32 \(top 2, not renormalised\), a shared expert of width 96/],
] as const;
const LLAMA_ARGS = ['-ctk', 'f32', '-ctv', 'f32', '-fa', 'off'];
const cacheDir = mkdtempSync(join(tmpdir(), 'gguf-moe-parity-'));
const pairs: Record<string, Pair> = {};

// One pair at a time: four servers starting at once on a loaded 2-core machine miss the start deadline.
beforeAll(async () => {
  for (const [file] of EXACT) await startPairs([[file, LLAMA_ARGS]], cacheDir, pairs);
}, 240_000);

afterAll(() => stopPairs(pairs, cacheDir));

describe.each(EXACT)('%s served beside llama-server on the same file', (file, report) => {
  it('names the architecture and its experts at startup', () => {
    expect(pairs[file].ours.output()).toMatch(report);
  });

  it('the same greedy completions (alone and batched) and chat replies', async () => {
    await expectSameGreedyCompletions(pairs[file]);
    await expectSameGreedyChats(pairs[file]);
  });
});
