/**
 * Mixture-of-experts GGUF files — `qwen3moe` (src/gguf/architectures/qwen3moe.ts) and
 * `qwen2moe` (qwen2moe.ts: a sigmoid-gated shared expert beside the routed ones, q/k/v
 * biases) — the routed experts as onnxruntime's com.microsoft MoE node
 * (src/graph/llama-graph-blocks.ts), against transformers on the same weights. Each file is a
 * seeded random transformers model (8 experts, top 2) converted by llama.cpp's
 * convert_hf_to_gguf.py; its reference JSON holds transformers' logits at every position of two
 * sequences (scripts/gguf/make_moe_fixtures.py). The Q8_0 file's reference is transformers
 * with that file's weights dequantized by gguf-py; here its dense matrices stay quantized
 * (MatMulNBits) and its experts are dequantized into the MoE node. Both graph flavours the
 * GGUF path builds prefill the sequence, then decode its last token alone over their cache.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildGgufGraph, ggufReportLines } from '../../src/gguf/gguf-model.js';
import { argmax, FIXTURES, modelOf, relativeDiff, runner } from './gguf-decoder-runner.js';

type Reference = { sequences: Array<{ ids: number[]; logits: number[][] }> } & Record<`max_logit_change_${string}`, number>;
const reference = (file: string) => JSON.parse(readFileSync(join(FIXTURES, file), 'utf8')) as Reference;

/** Our logits may differ from transformers' by float rounding: this fraction of the largest logit. */
const TOLERANCE = 3e-5;

const CASES = [
  {
    file: 'tiny-qwen3moe.gguf', reference: 'tiny-qwen3moe-reference.json',
    shape: { architecture: 'qwen3moe', qkNorm: true, qkvBias: false, tiedEmbeddings: true, ropeOrder: 'rotate-half', moe: { count: 8, used: 2, hidden: 32, normalize: true } },
    config: { architectures: ['Qwen3MoeForCausalLM'], num_experts: 8, num_experts_per_tok: 2, moe_intermediate_size: 32, norm_topk_prob: true },
    // Every expert taken, or the top-k weights not renormalised, move the logits.
    routing: ['with_every_expert', 'without_norm_topk_prob'],
    report: /GGUF F32 ×\d+: .*float32 \(experts, in the MoE kernel\)/,
  },
  {
    file: 'tiny-qwen2moe.gguf', reference: 'tiny-qwen2moe-reference.json',
    shape: { architecture: 'qwen2moe', qkNorm: false, qkvBias: true, tiedEmbeddings: false, ropeOrder: 'rotate-half', moe: { count: 8, used: 2, hidden: 32, normalize: false, sharedHidden: 96 } },
    config: { architectures: ['Qwen2MoeForCausalLM'], num_experts: 8, num_experts_per_tok: 2, moe_intermediate_size: 32, norm_topk_prob: false, shared_expert_intermediate_size: 96 },
    // Renormalising the top-k weights, every expert, or no shared expert move the logits.
    routing: ['with_norm_topk_prob', 'with_every_expert', 'without_shared_expert'],
    report: /GGUF F32 ×\d+: .*float32 \(experts, in the MoE kernel\)/,
  },
  {
    file: 'tiny-qwen2moe-q8_0.gguf', reference: 'tiny-qwen2moe-q8_0-reference.json',
    shape: { architecture: 'qwen2moe', moe: { count: 8, used: 2, hidden: 32, normalize: false, sharedHidden: 96 } },
    config: { architectures: ['Qwen2MoeForCausalLM'] },
    routing: [],
    report: /GGUF Q8_0 ×\d+: .*float32 \(experts, in the MoE kernel\)/,
  },
] as const;

describe.each(CASES)("$file: our graph against transformers", (c) => {
  const REFERENCE = reference(c.reference);

  it('reads the experts as llama.cpp does', async () => {
    const model = await modelOf(c.file);
    expect(model.shape).toMatchObject(c.shape);
    expect(model.config).toMatchObject(c.config);
    expect(ggufReportLines(model).join('\n')).toMatch(new RegExp(`GGUF: architecture ${c.shape.architecture}`));
    const { execution } = await buildGgufGraph(model, 'inplace', { weights: 'quantized', accuracyLevel: 0 });
    expect(execution.join('\n')).toMatch(c.report);
  });

  if (c.routing.length > 0) {
    it('the reference tells the routing apart', () => {
      for (const key of c.routing) expect(REFERENCE[`max_logit_change_${key}`]).toBeGreaterThan(0.05);
    });
  }

  for (const ops of ['inplace', 'fused'] as const) {
    it(`${ops}: logits at every position equal transformers' (prefill, then the last token decoded over the cache)`, async () => {
      const model = await modelOf(c.file);
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
    const model = await modelOf(c.file);
    for (const ops of ['gqa', 'portable'] as const) await expect(buildGgufGraph(model, ops)).rejects.toThrow(/built in the fused and inplace flavours only/);
  });
});
