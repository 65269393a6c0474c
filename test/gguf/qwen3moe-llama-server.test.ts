/**
 * A `qwen3moe` GGUF served by `npm start` beside llama.cpp's server on the same file
 * (tiny-qwen3moe.gguf: scripts/gguf/make_moe_fixtures.py; test/gguf/qwen3moe.test.ts checks our
 * logits against transformers'): greedy completions and chat through the file's template
 * (Qwen3-0.6B's), alone and batched. llama-server with an f32 KV cache and flash attention off
 * (architecture-parity.test.ts says why): its MoE (build_moe_ffn) against onnxruntime's MoE kernel.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSameGreedyChats, expectSameGreedyCompletions, startPairs, stopPairs, type Pair } from './llama-server-pair.js';

const FILE = 'tiny-qwen3moe.gguf';
const cacheDir = mkdtempSync(join(tmpdir(), 'gguf-qwen3moe-parity-'));
const pairs: Record<string, Pair> = {};

beforeAll(() => startPairs([[FILE, ['-ctk', 'f32', '-ctv', 'f32', '-fa', 'off']]], cacheDir, pairs), 240_000);

afterAll(() => stopPairs(pairs, cacheDir));

describe('a qwen3moe GGUF served beside llama-server on the same file', () => {
  it('names qwen3moe at startup', () => {
    expect(pairs[FILE].ours.output()).toMatch(/GGUF: architecture qwen3moe .*per-head q\/k norms/);
  });

  it('the same greedy completions (alone and batched) and chat replies', async () => {
    await expectSameGreedyCompletions(pairs[FILE]);
    await expectSameGreedyChats(pairs[FILE]);
  });
});
