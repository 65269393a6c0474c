import { afterAll, describe, expect, it } from 'vitest';
import { kvBytesPerToken, planContext } from '../../src/engine/context-length.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { formatLoadReport } from '../../src/engine/loading/load-report.js';
import { modelSpecFromFiles } from '../../src/onnx/model-spec.js';
import { Idefics3Processor, idefics3Settings } from '../../src/multimodal/processors/idefics3.js';
import { DEFAULT_MULTIMODAL_LIMITS } from '../../src/multimodal/types.js';
import { checkPromptTokenLimit } from '../../src/protocol/prompt-limits.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { collectGeneration, golden, MODEL_DIR } from '../helpers/model.js';
import { MODEL, postJson, testApp } from '../http/helpers.js';

// SmolVLM-256M-Instruct's text model (config.json text_config): 30 layers, 3 KV heads of 64, context 8192.
const SMOLVLM_256M = { numLayers: 30, numKeyValueHeads: 3, headDim: 64 };
const GiB = 1024 ** 3;

describe('planContext: the served context and rows from the model, maxSeqLen and the KV budget', () => {
  it('serves the model\'s context when no maxSeqLen is set and it fits', () => {
    const plan = planContext({ modelContext: 8192, maxSeqLen: null, bytesPerToken: kvBytesPerToken(SMOLVLM_256M, 'float32'), kvCacheMemoryBytes: 8 * GiB, maxRunningSequences: 64 });
    expect(plan.contextLength).toBe(8192);
    // 46080 bytes a token, 360 MiB a full sequence: 16 rows fill 5.6 of the 8 GiB, 32 would not fit.
    expect(plan.maxRunningSequences).toBe(16);
    expect(plan.notes[0]).toMatch(/^Context: 8192 tokens \(the model's config\); KV cache up to 360\.0 MiB per full-context sequence/);
    expect(plan.notes[1]).toMatch(/At most 16 sequences run together \(maxRunningSequences is 64\)/);
  });

  it('keeps maxRunningSequences when every row at the full context fits', () => {
    const plan = planContext({ modelContext: 2048, maxSeqLen: null, bytesPerToken: kvBytesPerToken(SMOLVLM_256M, 'float32'), kvCacheMemoryBytes: 8 * GiB, maxRunningSequences: 64 });
    expect(plan).toMatchObject({ contextLength: 2048, maxRunningSequences: 64 });
    expect(plan.notes).toHaveLength(1);
  });

  it('float16 KV takes half', () => {
    expect(kvBytesPerToken(SMOLVLM_256M, 'float16') * 2).toBe(kvBytesPerToken(SMOLVLM_256M, 'float32'));
    const plan = planContext({ modelContext: 8192, maxSeqLen: null, bytesPerToken: kvBytesPerToken(SMOLVLM_256M, 'float16'), kvCacheMemoryBytes: 8 * GiB, maxRunningSequences: 64 });
    expect(plan.maxRunningSequences).toBe(32);
  });

  it('maxSeqLen lowers the context, and fewer slots let more rows run', () => {
    const plan = planContext({ modelContext: 8192, maxSeqLen: 1024, bytesPerToken: kvBytesPerToken(SMOLVLM_256M, 'float32'), kvCacheMemoryBytes: 8 * GiB, maxRunningSequences: 64 });
    expect(plan).toMatchObject({ contextLength: 1024, maxRunningSequences: 64 });
    expect(plan.notes[0]).toContain("(maxSeqLen; the model's is 8192)");
  });

  it('a maxSeqLen above the model\'s context serves the model\'s, saying so', () => {
    const plan = planContext({ modelContext: 512, maxSeqLen: 4096, bytesPerToken: 1280, kvCacheMemoryBytes: 8 * GiB, maxRunningSequences: 64 });
    expect(plan.contextLength).toBe(512);
    expect(plan.notes.join('\n')).toContain('maxSeqLen 4096 is more than the model\'s context: serving the model\'s 512 tokens.');
  });

  it('lowers an unset context until one sequence fits the budget (a 128k model on 1 GiB)', () => {
    const llama = { numLayers: 16, numKeyValueHeads: 8, headDim: 64 }; // Llama-3.2-1B: 64 KiB a token in float32
    const plan = planContext({ modelContext: 131072, maxSeqLen: null, bytesPerToken: kvBytesPerToken(llama, 'float32'), kvCacheMemoryBytes: GiB, maxRunningSequences: 64 });
    // 16384 tokens are exactly 1 GiB, but the cache keeps a quarter more room: 13056 slots... of whole 64-slot blocks.
    expect(plan.contextLength % 64).toBe(0);
    expect(plan.contextLength).toBeLessThanOrEqual(16384);
    expect(plan.contextLength).toBeGreaterThan(12_000);
    expect(plan.maxRunningSequences).toBe(1);
    expect(plan.notes.join('\n')).toMatch(/Context lowered from the model's 131072 tokens to \d+: one sequence's KV cache at 131072 would take 8\.00 GiB, more than kvCacheMemoryBytes \(1\.00 GiB\)/);
  });

  it('refuses a set maxSeqLen whose one sequence does not fit, naming both settings', () => {
    const llama = { numLayers: 16, numKeyValueHeads: 8, headDim: 64 };
    expect(() =>
      planContext({ modelContext: 131072, maxSeqLen: 131072, bytesPerToken: kvBytesPerToken(llama, 'float32'), kvCacheMemoryBytes: GiB, maxRunningSequences: 64 }),
    ).toThrow(/maxSeqLen 131072 needs 8\.00 GiB of KV cache for one sequence, more than kvCacheMemoryBytes \(1\.00 GiB\): lower maxSeqLen \(MAX_SEQ_LEN\) or raise kvCacheMemoryBytes/);
  });
});

describe("SmolVLM-256M-Instruct's settings: a 61×45 image fits the context from its config", () => {
  // Its config.json (text_config), tokenizer_config.json and preprocessor_config.json fields that matter here.
  const config = {
    model_type: 'idefics3',
    scale_factor: 4,
    vision_config: { image_size: 512, patch_size: 16 },
    text_config: { hidden_size: 576, num_attention_heads: 9, num_key_value_heads: 3, num_hidden_layers: 30, vocab_size: 49280, max_position_embeddings: 8192 },
  };
  const preprocessor = { do_resize: true, size: { longest_edge: 2048 }, max_image_size: { longest_edge: 512 }, do_image_splitting: true, resample: 1 };

  it('832 image tokens (transformers: 3 × 4 tiles + the global image, 64 each) in a context of 8192', () => {
    const { spec } = modelSpecFromFiles({ config, tokenizerConfig: { model_max_length: 8192 } });
    const plan = planContext({ modelContext: spec.maxPositionEmbeddings, maxSeqLen: null, bytesPerToken: kvBytesPerToken(spec, 'float32'), kvCacheMemoryBytes: 8 * GiB, maxRunningSequences: 64 });
    expect(plan.contextLength).toBe(8192);
    const processor = new Idefics3Processor(idefics3Settings(config, preprocessor, {}), 49190);
    expect(processor.settings.imageSeqLen).toBe(64);
    // 12 tiles of 64 image tokens and their 2 markers, the global image's 64 and 3 markers.
    const promptTokens = processor.declaredPromptTokens(61, 45, 'messages', DEFAULT_MULTIMODAL_LIMITS);
    expect(promptTokens).toBe(12 * (64 + 2) + 64 + 3);
    expect(() => checkPromptTokenLimit(promptTokens + 20, { maxInputTokenLen: 511, maxModelLen: plan.contextLength }, 'openai')).not.toThrow();
    // The old default context of 512 refused it.
    expect(() => checkPromptTokenLimit(promptTokens + 20, { maxInputTokenLen: 511, maxSeqLen: 512, maxModelLen: plan.contextLength }, 'openai')).toThrow(/maximum context length is 512/);
  });
});

describe('the engine serves the planned context (stories260K: 512 tokens, 1280 KV bytes a token)', () => {
  let small: LocalEngine | undefined;
  afterAll(async () => {
    await small?.dispose();
  });

  it('by default: the model\'s 512 tokens, stated at startup', async () => {
    const engine = await createNodeEngine({ modelDir: MODEL_DIR, backend: 'native' });
    try {
      expect(engine.info.maxModelLen).toBe(512);
      expect(formatLoadReport(engine.loadReport).info.join('\n')).toMatch(/context 512 tokens[\s\S]*Context: 512 tokens \(the model's config\)/);
    } finally {
      await engine.dispose();
    }
  });

  it('with a small KV budget: the context lowered, and a generation stops at it', async () => {
    // 320 KiB: 192 tokens, whose cache with a quarter more room (256 slots) is exactly 320 KiB.
    small = await createNodeEngine({ modelDir: MODEL_DIR, backend: 'native', limits: { kvCacheMemoryBytes: 320 * 1024 } });
    expect(small.info.maxModelLen).toBe(192);
    expect(small.limits.maxRunningSequences).toBe(1);
    expect(small.loadReport.contextLength).toBe(192);
    const out = await collectGeneration(small, golden.prompt_ids, { temperature: 0, maxTokens: 1000 });
    expect(out.finishReason).toBe('length');
    expect(golden.prompt_ids.length + out.tokenIds.length).toBe(192);
    // Over HTTP: the context is the one served, and a request may not hold more rows than run.
    const app = testApp(small);
    expect((await (await app.request('/v1/models')).json()).data[0].max_model_len).toBe(192);
    const wide = await postJson(app, '/v1/completions', { model: MODEL, prompt: 'Once', n: 2, max_tokens: 4 });
    expect(wide.status).toBe(400);
    expect((await wide.json()).error.message).toMatch(/of the 1 sequences one engine step decodes/);
  });

  it('refuses to start when a set maxSeqLen does not fit the budget', async () => {
    await expect(createNodeEngine({ modelDir: MODEL_DIR, backend: 'native', limits: { maxSeqLen: 512, kvCacheMemoryBytes: 320 * 1024 } })).rejects.toThrow(
      /maxSeqLen 512 needs 640\.0 KiB of KV cache for one sequence, more than kvCacheMemoryBytes \(320\.0 KiB\)/,
    );
  });
});
