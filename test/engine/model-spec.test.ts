/** config.json of the families users run, read into the engine's model spec. */
import { describe, expect, it } from 'vitest';
import { modelSpecFromFiles } from '../../src/onnx/model-spec.js';

const spec = (config: Record<string, unknown>, extra: Omit<Parameters<typeof modelSpecFromFiles>[0], 'config'> = {}) =>
  modelSpecFromFiles({ config, ...extra }).spec;

describe('model spec from the configs of common families', () => {
  it.each([
    ['llama (3.2 1B)', { model_type: 'llama', hidden_size: 2048, num_attention_heads: 32, num_key_value_heads: 8, head_dim: 64, num_hidden_layers: 16, vocab_size: 128256, max_position_embeddings: 131072, bos_token_id: 128000, eos_token_id: [128001, 128008, 128009] }, { numLayers: 16, numKeyValueHeads: 8, headDim: 64, vocabSize: 128256, maxPositionEmbeddings: 131072, bosTokenId: 128000, eosTokenIds: [128001, 128008, 128009] }],
    ['mistral (7B)', { model_type: 'mistral', hidden_size: 4096, num_attention_heads: 32, num_key_value_heads: 8, num_hidden_layers: 32, vocab_size: 32000, max_position_embeddings: 32768, sliding_window: 4096, eos_token_id: 2 }, { numLayers: 32, numKeyValueHeads: 8, headDim: 128, eosTokenIds: [2] }],
    ['qwen2 (2.5 0.5B)', { model_type: 'qwen2', hidden_size: 896, num_attention_heads: 14, num_key_value_heads: 2, num_hidden_layers: 24, vocab_size: 151936, max_position_embeddings: 32768, eos_token_id: 151645 }, { numLayers: 24, numKeyValueHeads: 2, headDim: 64, eosTokenIds: [151645] }],
    ['qwen3 (0.6B), head_dim not hidden_size / heads', { model_type: 'qwen3', hidden_size: 1024, num_attention_heads: 16, num_key_value_heads: 8, head_dim: 128, num_hidden_layers: 28, vocab_size: 151936, max_position_embeddings: 40960, eos_token_id: 151645 }, { numKeyValueHeads: 8, headDim: 128 }],
    ['phi3 (mini 4k)', { model_type: 'phi3', hidden_size: 3072, num_attention_heads: 32, num_key_value_heads: 32, num_hidden_layers: 32, vocab_size: 32064, max_position_embeddings: 4096, eos_token_id: 32000 }, { numKeyValueHeads: 32, headDim: 96, maxPositionEmbeddings: 4096 }],
    ['gemma (2B), one kv head of 256', { model_type: 'gemma', hidden_size: 2048, num_attention_heads: 8, num_key_value_heads: 1, head_dim: 256, num_hidden_layers: 18, vocab_size: 256000, max_position_embeddings: 8192, eos_token_id: 1 }, { numKeyValueHeads: 1, headDim: 256 }],
    ['gemma2 (2B)', { model_type: 'gemma2', hidden_size: 2304, num_attention_heads: 8, num_key_value_heads: 4, head_dim: 256, num_hidden_layers: 26, vocab_size: 256000, max_position_embeddings: 8192, eos_token_id: [1, 107] }, { numLayers: 26, headDim: 256, eosTokenIds: [1, 107] }],
    ['gemma3 (4B), fields in text_config', { model_type: 'gemma3', architectures: ['Gemma3ForConditionalGeneration'], eos_token_id: [1, 106], text_config: { model_type: 'gemma3_text', hidden_size: 2560, num_attention_heads: 8, num_key_value_heads: 4, head_dim: 256, num_hidden_layers: 34, vocab_size: 262208, max_position_embeddings: 131072 } }, { numLayers: 34, numKeyValueHeads: 4, headDim: 256, vocabSize: 262208, maxPositionEmbeddings: 131072, eosTokenIds: [1, 106] }],
    ['smollm (SmolLM2 135M)', { model_type: 'llama', hidden_size: 576, num_attention_heads: 9, num_key_value_heads: 3, num_hidden_layers: 30, vocab_size: 49152, max_position_embeddings: 8192, eos_token_id: 2 }, { numLayers: 30, numKeyValueHeads: 3, headDim: 64 }],
    ['no num_key_value_heads (multi-head attention)', { hidden_size: 64, num_attention_heads: 4, num_hidden_layers: 2, vocab_size: 100, max_position_embeddings: 128 }, { numKeyValueHeads: 4, headDim: 16, eosTokenIds: [] }],
  ])('%s', (_, config, expected) => {
    expect(spec(config)).toMatchObject(expected);
  });

  it('takes head_dim when hidden_size is absent, and a null head_dim as not given', () => {
    expect(spec({ num_attention_heads: 4, head_dim: 32, num_hidden_layers: 1, vocab_size: 10, max_position_embeddings: 8 }).headDim).toBe(32);
    expect(spec({ hidden_size: 64, num_attention_heads: 4, head_dim: null, num_hidden_layers: 1, vocab_size: 10, max_position_embeddings: 8 }).headDim).toBe(16);
  });

  it('refuses a config with neither hidden_size nor head_dim, naming the field', () => {
    expect(() => spec({ num_attention_heads: 4, num_hidden_layers: 1, vocab_size: 10, max_position_embeddings: 8 })).toThrow(
      'config.json: "hidden_size" must be a positive integer, got undefined',
    );
  });
});

describe('EOS ids', () => {
  const base = { hidden_size: 64, num_attention_heads: 4, num_hidden_layers: 2, vocab_size: 300, max_position_embeddings: 128 };
  const tokenizerJson = { added_tokens: [{ id: 277, content: '<|endoftext|>' }, { id: 279, content: '<|im_end|>' }], model: { vocab: { a: 0 } } };

  it('collects config.json, then generation_config.json, then tokenizer_config.json', () => {
    expect(
      spec({ ...base, eos_token_id: 279 }, { generationConfig: { eos_token_id: [279, 277] }, tokenizerConfig: { eos_token: '<|im_end|>' }, tokenizerJson }).eosTokenIds,
    ).toEqual([279, 277]);
    expect(spec({ ...base, eos_token_id: 5 }, { generationConfig: { eos_token_id: 6 }, tokenizerConfig: { eos_token: { content: '<|endoftext|>' } }, tokenizerJson }).eosTokenIds).toEqual([5, 6, 277]);
  });

  it('falls back to the tokenizer when the configs name none, never to an empty list', () => {
    expect(spec(base, { generationConfig: {}, tokenizerConfig: { eos_token: '<|im_end|>' }, tokenizerJson }).eosTokenIds).toEqual([279]);
    expect(spec({ ...base, eos_token_id: null }, { generationConfig: { eos_token_id: [] }, tokenizerConfig: { eos_token_id: 277 } }).eosTokenIds).toEqual([277]);
  });
});

describe('context length', () => {
  const base = { hidden_size: 64, num_attention_heads: 4, num_hidden_layers: 2, vocab_size: 300, max_position_embeddings: 32768 };

  it('takes the smaller of max_position_embeddings and model_max_length, and says so', () => {
    const { spec: smaller, notes } = modelSpecFromFiles({ config: base, tokenizerConfig: { model_max_length: 131072 } });
    expect(smaller.maxPositionEmbeddings).toBe(32768);
    expect(notes).toEqual([
      "config.json's max_position_embeddings (32768) and tokenizer_config.json's model_max_length (131072) disagree: the context is the smaller, 32768 tokens.",
    ]);
    expect(modelSpecFromFiles({ config: base, tokenizerConfig: { model_max_length: 2048 } }).spec.maxPositionEmbeddings).toBe(2048);
  });

  it("ignores transformers' no-limit sentinel", () => {
    const result = modelSpecFromFiles({ config: base, tokenizerConfig: { model_max_length: 1e30 } });
    expect(result.spec.maxPositionEmbeddings).toBe(32768);
    expect(result.notes).toEqual([]);
  });
});
