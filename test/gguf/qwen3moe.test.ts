/**
 * `qwen3moe` GGUF files (src/gguf/architectures/qwen3moe.ts; the experts as onnxruntime's
 * com.microsoft MoE node, src/graph/llama-graph-blocks.ts) against transformers'
 * Qwen3MoeForCausalLM on the same weights: tiny-qwen3moe.gguf is a seeded random transformers
 * model (8 experts, top 2, norm_topk_prob) converted by llama.cpp's convert_hf_to_gguf.py, and
 * tiny-qwen3moe-reference.json holds transformers' logits at every position of two sequences
 * (scripts/gguf/make_moe_fixtures.py). Both graph flavours the GGUF path builds prefill the
 * sequence, then decode its last token alone over their cache.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildGgufGraph, ggufReportLines } from '../../src/gguf/gguf-model.js';
import { argmax, FIXTURES, modelOf, relativeDiff, runner } from './gguf-decoder-runner.js';

const REFERENCE = JSON.parse(readFileSync(join(FIXTURES, 'tiny-qwen3moe-reference.json'), 'utf8')) as {
  sequences: Array<{ ids: number[]; logits: number[][] }>;
  max_logit_change_with_every_expert: number;
  max_logit_change_without_norm_topk_prob: number;
};

/** Our logits may differ from transformers' by float rounding: this fraction of the largest logit. */
const TOLERANCE = 3e-5;

describe("qwen3moe GGUF: our graph against transformers' Qwen3MoeForCausalLM", () => {
  it('reads the experts as llama.cpp does', async () => {
    const model = await modelOf('tiny-qwen3moe.gguf');
    expect(model.shape).toMatchObject({ architecture: 'qwen3moe', qkNorm: true, ropeOrder: 'rotate-half', moe: { count: 8, used: 2, hidden: 32, normalize: true } });
    expect(model.config).toMatchObject({ architectures: ['Qwen3MoeForCausalLM'], num_experts: 8, num_experts_per_tok: 2, moe_intermediate_size: 32 });
    expect(ggufReportLines(model).join('\n')).toMatch(/GGUF: architecture qwen3moe/);
    const { execution } = await buildGgufGraph(model, 'inplace');
    expect(execution.join('\n')).toMatch(/GGUF F32 ×\d+: .*float32 \(experts, in the MoE kernel\)/);
  });

  it('the reference tells the routing apart: every expert taken, or the top-k weights not renormalised, move the logits', () => {
    expect(REFERENCE.max_logit_change_with_every_expert).toBeGreaterThan(0.05);
    expect(REFERENCE.max_logit_change_without_norm_topk_prob).toBeGreaterThan(0.05);
  });

  for (const ops of ['inplace', 'fused'] as const) {
    it(`${ops}: logits at every position equal transformers' (prefill, then the last token decoded over the cache)`, async () => {
      const model = await modelOf('tiny-qwen3moe.gguf');
      const vocab = model.shape.vocabSize;
      for (const { ids, logits } of REFERENCE.sequences) {
        const run = await runner(model, ops, 'quantized');
        expect(run.nodes.filter((op) => op === 'MoE')).toHaveLength(model.shape.nLayers);
        const prefill = await run.step(ids.slice(0, -1));
        expect(relativeDiff(prefill, logits.slice(0, -1), vocab)).toBeLessThan(TOLERANCE);
        const last = await run.step(ids.slice(-1));
        expect(relativeDiff(last, logits.slice(-1), vocab)).toBeLessThan(TOLERANCE);
        expect(argmax(last)).toBe(argmax(logits.at(-1)!));
      }
    }, 60_000);
  }

  it('graph flavours without the experts node: gqa and portable', async () => {
    const model = await modelOf('tiny-qwen3moe.gguf');
    for (const ops of ['gqa', 'portable'] as const) await expect(buildGgufGraph(model, ops)).rejects.toThrow(/built in the fused and inplace flavours only/);
  });
});
