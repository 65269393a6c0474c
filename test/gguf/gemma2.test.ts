/**
 * `gemma2` GGUF files (src/gguf/architectures/gemma2.ts, src/graph/gemma2-graph.ts) against
 * transformers' Gemma2ForCausalLM on the same weights: the fixtures are a seeded random
 * transformers model converted by llama.cpp's convert_hf_to_gguf.py, and
 * tiny-gemma2-reference.json holds transformers' logits at every position of two greedy
 * generations (scripts/gguf/make_gemma2_fixtures.py). Both graph flavours the GGUF path builds
 * (inplace: what Node and the page run; fused: the Hugging Face contract, `npm run convert --
 * --from-gguf`) prefill the prompt and then decode one token at a time over their cache.
 * Greedy parity over HTTP against llama-server is test/gguf/gemma2-llama-server.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readGguf, type GgufFile } from '../../src/gguf/gguf-file.js';
import { buildGgufGraph, ggufReportLines } from '../../src/gguf/gguf-model.js';
import { gemma2ShapeOf } from '../../src/gguf/architectures/gemma2.js';
import { spawnFailingServer } from '../e2e/spawn-server.js';
import { bytesSource, expectGeneration, expectQuantizedLikeFloat, expectWellConditioned, FIXTURES, modelOf, type Generation } from './gguf-decoder-runner.js';

const REFERENCE = JSON.parse(readFileSync(join(FIXTURES, 'tiny-gemma2-reference.json'), 'utf8')) as {
  generations: Generation[];
  max_logit_change_without_sliding_window: number;
  max_logit_change_without_attn_logit_softcapping: number;
  max_logit_change_without_final_logit_softcapping: number;
};

/** Our logits may differ from transformers' by float rounding: this fraction of the largest logit (measured: 6.4e-6). */
const TOLERANCE = 3e-5;

describe('gemma2 GGUF: our graph against transformers\' Gemma2ForCausalLM', () => {
  it('reads the file as llama.cpp does: head size apart from hidden / heads, soft-caps, sliding window, query scale', async () => {
    const model = await modelOf('tiny-gemma2.gguf');
    const { shape } = model;
    expect(shape).toMatchObject({ architecture: 'gemma2', dim: 64, nHeads: 4, nKvHeads: 2, headDim: 32, nLayers: 4, hiddenDim: 128, tiedEmbeddings: true, ropeOrder: 'rotate-half' });
    expect(shape).toMatchObject({ fileContextLength: 512, contextLength: 512, gemma2: { attentionSoftcap: 20, finalSoftcap: 30, slidingWindow: 16, slidingLayers: [true, false, true, false] } });
    expect((shape as unknown as { gemma2: { queryScale: number } }).gemma2.queryScale).toBeCloseTo(1 / Math.sqrt(32), 12);
    expect(model.config).toMatchObject({ architectures: ['Gemma2ForCausalLM'], head_dim: 32, max_position_embeddings: 512, hidden_activation: 'gelu_pytorch_tanh', query_pre_attn_scalar: 32, sliding_window: 16 });
    const report = ggufReportLines(model).join('\n');
    expect(report).toMatch(/GGUF: architecture gemma2 \("tiny-gemma2"\), 4 layers, 4 heads \/ 2 key-value heads, head size 32, rope theta 10000, tied output head/);
    expect(report).not.toMatch(/GGUF context/);
    expect(report).toMatch(/query scale 1\/sqrt\(32\) from key_length 32, attention logits soft-capped at 20, final logits at 30, 4 heads of 32/);
    expect(report).toMatch(/sliding window of 16 positions on layers 0, 2 \(of 4\), full attention on the others/);
    // Gemma's SentencePiece vocabulary: no space prefix; <end_of_turn> ends a generation as in llama.cpp.
    expect(model.tokenizer.description).toMatch(/llama \(SentencePiece, byte fallback\), 512 tokens, add_bos true, add_eos false, chat template from the file/);
    expect(model.generationConfig.eos_token_id).toEqual([1, 5]);
  });

  it('the reference is well conditioned and tells the model apart: margins far above the tolerance, window and caps that change the logits', () => {
    // Without the sliding window or either soft-cap, transformers' logits move by far more than the tolerance.
    const changes = [REFERENCE.max_logit_change_without_sliding_window, REFERENCE.max_logit_change_without_attn_logit_softcapping, REFERENCE.max_logit_change_without_final_logit_softcapping];
    expectWellConditioned(REFERENCE.generations, changes, 16, TOLERANCE);
  });

  for (const ops of ['inplace', 'fused'] as const) {
    it(`${ops}: logits at every prompt position and every greedy step equal transformers', and so do the greedy ids`, async () => {
      const model = await modelOf('tiny-gemma2.gguf');
      for (const generation of REFERENCE.generations) await expectGeneration(model, ops, generation, TOLERANCE);
    }, 60_000);
  }

  it('Q8_0: matrices kept quantized (8-bit MatMulNBits / GatherBlockQuantized) give the logits of the float32-dequantized graph', async () => {
    const model = await modelOf('tiny-gemma2-q8_0.gguf');
    const execution = await expectQuantizedLikeFloat(model, REFERENCE.generations[0].prompt_ids);
    expect(execution.join('\n')).toMatch(/GGUF Q8_0 ×\d+: MatMulNBits\/GatherBlockQuantized, 8-bit codes, block 32/);
  }, 60_000);
});

describe('gemma2 GGUF: what the graph cannot express is refused by name', () => {
  const file = async (): Promise<GgufFile> => readGguf(bytesSource(new Uint8Array(await readFile(join(FIXTURES, 'tiny-gemma2.gguf')))));
  const refusal = async (change: (file: GgufFile) => void) => {
    const copy = await file();
    change(copy);
    try {
      gemma2ShapeOf(copy);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('the file was accepted');
  };

  it('a rope base of its own on the sliding-window layers', async () => {
    expect(await refusal((f) => f.metadata.set('gemma2.rope.freq_base_swa', 1e6))).toBe(
      'rope.freq_base_swa 1000000 (a rope base of its own on the sliding-window layers, beside 10000) is not supported',
    );
  });

  it('values of another size than the keys, partial rotary, a non-linear rope scaling', async () => {
    expect(await refusal((f) => f.metadata.set('gemma2.attention.value_length', 16))).toMatch(/attention.value_length 16 differs from attention.key_length 32: not supported/);
    expect(await refusal((f) => f.metadata.set('gemma2.rope.dimension_count', 16))).toMatch(/partial rotary \(rope.dimension_count 16 of head size 32\) is not supported/);
    expect(await refusal((f) => f.metadata.set('gemma2.rope.scaling.type', 'yarn'))).toMatch(/rope scaling "yarn" is not supported for gemma2/);
  });

  it('an output head of its own (llama.cpp reads the head from token_embd), a missing post-norm', async () => {
    expect(await refusal((f) => f.tensors.push({ ...f.tensors[0], name: 'output.weight' }))).toMatch(/tensors outside the gemma2 layout \(its head is token_embd.weight\): output.weight/);
    expect(await refusal((f) => (f.tensors = f.tensors.filter((t) => t.name !== 'blk.2.post_ffw_norm.weight')))).toBe('tensor blk.2.post_ffw_norm.weight is missing');
  });

  it('a soft-cap that is not a positive number', async () => {
    expect(await refusal((f) => f.metadata.set('gemma2.final_logit_softcapping', 0))).toMatch(/gemma2.final_logit_softcapping is 0: not a positive number/);
  });

  it('graph flavours without its attention: gqa and portable', async () => {
    const model = await modelOf('tiny-gemma2.gguf');
    for (const ops of ['gqa', 'portable'] as const) {
      await expect(buildGgufGraph(model, ops)).rejects.toThrow(`gemma2 is built in the fused and inplace flavours only, not ${ops}`);
    }
  });

  describe('npm start', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gemma2-refusal-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('exits at startup naming what it cannot serve', async () => {
      const copy = readFileSync(join(FIXTURES, 'tiny-gemma2.gguf'));
      const key = Buffer.from('gemma2.attention.value_length');
      // key, then its u32 value type (4), then the value.
      const valueAt = copy.indexOf(key) + key.length + 4;
      expect(copy.readUInt32LE(valueAt)).toBe(32);
      copy.writeUInt32LE(16, valueAt);
      const path = join(dir, 'values-of-16.gguf');
      writeFileSync(path, copy);
      const exited = await spawnFailingServer({ MODEL_DIR: path, GGUF_CACHE_DIR: dir });
      expect(exited.code).not.toBe(0);
      expect(exited.output).toMatch(/Cannot load the GGUF ".*values-of-16\.gguf": attention\.value_length 16 differs from attention\.key_length 32: not supported/);
    });
  });
});
