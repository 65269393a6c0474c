/**
 * `gemma3` GGUF files (src/gguf/architectures/gemma3.ts, built by src/graph/gemma2-graph.ts)
 * against transformers' Gemma3ForCausalLM on the same weights: the fixtures are a seeded
 * random transformers model converted by llama.cpp's convert_hf_to_gguf.py, and
 * tiny-gemma3-reference.json holds transformers' logits at every position of two greedy
 * generations (scripts/gguf/make_gemma3_fixtures.py). Both graph flavours the GGUF path builds
 * (inplace: Node, the page and workerd; fused: `npm run convert -- --from-gguf`) prefill the
 * prompt and decode one token at a time over their cache. Greedy parity over HTTP against
 * llama-server, chat through the file's template and batching: gemma3-llama-server.test.ts.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readGguf, type GgufFile } from '../../src/gguf/gguf-file.js';
import { buildGgufGraph, ggufReportLines } from '../../src/gguf/gguf-model.js';
import { gemma3ShapeOf } from '../../src/gguf/architectures/gemma3.js';
import { bytesSource, expectGeneration, expectQuantizedLikeFloat, expectWellConditioned, FIXTURES, modelOf, type Generation } from './gguf-decoder-runner.js';

const REFERENCE = JSON.parse(readFileSync(join(FIXTURES, 'tiny-gemma3-reference.json'), 'utf8')) as {
  generations: Generation[];
  chat_template: string;
  max_logit_change_without_sliding_window: number;
  max_logit_change_with_the_global_rope_on_sliding_layers: number;
  max_logit_change_without_rope_scaling: number;
  max_logit_change_without_qk_norm: number;
};

/**
 * Our logits may differ from transformers' by float rounding: this fraction of the largest
 * logit (measured: 3.8e-5; its q/k norms of ~2.5 make attention peaked, which amplifies the
 * float32 rounding of the rope angles, taken in float64 here and in float32 there).
 */
const TOLERANCE = 1e-4;
const WINDOW = 16;

describe("gemma3 GGUF: our graph against transformers' Gemma3ForCausalLM", () => {
  it('reads the file as llama.cpp does: five sliding layers in six, two rope bases, linear scaling on the global ones, q/k norms, no soft-cap', async () => {
    const model = await modelOf('tiny-gemma3.gguf');
    const { shape } = model;
    expect(shape).toMatchObject({ architecture: 'gemma3', dim: 64, nHeads: 4, nKvHeads: 2, headDim: 32, nLayers: 7, hiddenDim: 128, tiedEmbeddings: true, qkNorm: true, ropeOrder: 'rotate-half' });
    expect(shape).toMatchObject({ ropeTheta: 1e6, ropeScaling: { kind: 'linear', factor: 8 }, contextLength: 512 });
    expect(shape).toMatchObject({ gemma3: { finalSoftcap: null, slidingWindow: WINDOW, slidingLayers: [true, true, true, true, true, false, true], slidingRopeTheta: 10000 } });
    expect((shape as unknown as { gemma3: { queryScale: number } }).gemma3.queryScale).toBeCloseTo(1 / Math.sqrt(32), 12);
    expect(model.config).toMatchObject({
      architectures: ['Gemma3ForCausalLM'],
      model_type: 'gemma3_text',
      head_dim: 32,
      query_pre_attn_scalar: 32,
      sliding_window: WINDOW,
      final_logit_softcapping: null,
      rope_parameters: { full_attention: { rope_type: 'linear', factor: 8, rope_theta: 1e6 }, sliding_attention: { rope_type: 'default', rope_theta: 10000 } },
    });
    const report = ggufReportLines(model).join('\n');
    expect(report).toMatch(/GGUF: architecture gemma3 \("tiny-gemma3"\), 7 layers, 4 heads \/ 2 key-value heads, head size 32, per-head q\/k norms, rope theta 1000000, rope scaling linear, tied output head/);
    expect(report).toMatch(/GGUF gemma3: embeddings × sqrt\(64\), 4 RMSNorms a layer and q\/k norms per head, GELU \(tanh\) MLP, query scale 1\/sqrt\(32\) from key_length 32, no soft-capping, 4 heads of 32/);
    expect(report).toMatch(/GGUF gemma3: sliding window of 16 positions on 6 of 7 layers \(rope base 10000, unscaled\); full attention on layers 5 \(rope base 1000000, linear scaling ×8\)/);
    // The chat template is the file's (Gemma 3's, which folds a system turn into the first user turn).
    expect(model.tokenizer.description).toMatch(/llama \(SentencePiece, byte fallback\), 512 tokens, add_bos true, add_eos false, chat template from the file/);
    expect(model.file.metadata.get('tokenizer.chat_template')).toBe(REFERENCE.chat_template);
    expect(model.generationConfig.eos_token_id).toEqual([1, 5]);
  });

  it('the reference tells the model apart: without the window, with one rope for all layers, without the scaling or the q/k norms, the logits move', () => {
    const changes = [
      REFERENCE.max_logit_change_without_sliding_window,
      REFERENCE.max_logit_change_with_the_global_rope_on_sliding_layers,
      REFERENCE.max_logit_change_without_rope_scaling,
      REFERENCE.max_logit_change_without_qk_norm,
    ];
    expectWellConditioned(REFERENCE.generations, changes, WINDOW, TOLERANCE);
  });

  for (const ops of ['inplace', 'fused'] as const) {
    it(`${ops}: logits at every prompt position and every greedy step equal transformers', and so do the greedy ids`, async () => {
      const model = await modelOf('tiny-gemma3.gguf');
      for (const generation of REFERENCE.generations) await expectGeneration(model, ops, generation, TOLERANCE);
    }, 60_000);
  }

  it('Q8_0: matrices kept quantized give the logits of the float32-dequantized graph', async () => {
    const model = await modelOf('tiny-gemma3-q8_0.gguf');
    await expectQuantizedLikeFloat(model, REFERENCE.generations[0].prompt_ids);
  }, 60_000);
});

describe('gemma3 GGUF: what the graph cannot express is refused by name', () => {
  const file = async (): Promise<GgufFile> => readGguf(bytesSource(new Uint8Array(await readFile(join(FIXTURES, 'tiny-gemma3.gguf')))));
  const refusal = async (change: (file: GgufFile) => void) => {
    const copy = await file();
    change(copy);
    try {
      gemma3ShapeOf(copy);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('the file was accepted');
  };

  it('a missing q/k norm, an output head of its own, a non-linear rope scaling, a per-layer window pattern', async () => {
    expect(await refusal((f) => (f.tensors = f.tensors.filter((t) => t.name !== 'blk.3.attn_k_norm.weight')))).toBe('tensor blk.3.attn_k_norm.weight is missing');
    expect(await refusal((f) => f.tensors.push({ ...f.tensors[0], name: 'output.weight' }))).toMatch(/tensors outside the gemma3 layout \(its head is token_embd.weight\): output.weight/);
    expect(await refusal((f) => f.metadata.set('gemma3.rope.scaling.type', 'yarn'))).toMatch(/rope scaling "yarn" is not supported for gemma3/);
    expect(await refusal((f) => f.metadata.set('gemma3.attention.sliding_window_pattern', [true, false]))).toMatch(/sliding_window_pattern as a per-layer array is not supported/);
  });

  it('a file without a sliding window is all global layers; a final soft-cap where the file sets one', async () => {
    const copy = await file();
    copy.metadata.delete('gemma3.attention.sliding_window');
    copy.metadata.set('gemma3.final_logit_softcapping', 30);
    const shape = gemma3ShapeOf(copy);
    expect(shape.gemma3).toMatchObject({ slidingWindow: null, slidingLayers: Array(7).fill(false), finalSoftcap: 30, slidingRopeTheta: 1e6 });
  });

  it('graph flavours without its attention: gqa and portable', async () => {
    const model = await modelOf('tiny-gemma3.gguf');
    for (const ops of ['gqa', 'portable'] as const) {
      await expect(buildGgufGraph(model, ops)).rejects.toThrow(`gemma3 is built in the fused and inplace flavours only, not ${ops}`);
    }
  });
});
