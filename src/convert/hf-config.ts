/** config.json / generation_config.json contents for a converted llama2.c checkpoint. */
import type { DecoderCheckpoint } from '../graph/decoder-checkpoint.js';

/** llama2.c's run.c hard-codes this epsilon; the checkpoint does not store it. */
export const LLAMA2C_RMS_NORM_EPS = 1e-5;
/** llama2.c tokenizers fix these ids (sentencepiece defaults). */
export const LLAMA2C_BOS_ID = 1;
export const LLAMA2C_EOS_ID = 2;

export function buildHfConfig(ckpt: DecoderCheckpoint, ropeTheta: number): Record<string, unknown> {
  const h = ckpt.header;
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: h.dim,
    intermediate_size: h.hiddenDim,
    num_hidden_layers: h.nLayers,
    num_attention_heads: h.nHeads,
    num_key_value_heads: h.nKvHeads,
    head_dim: ckpt.headDim,
    vocab_size: h.vocabSize,
    max_position_embeddings: h.seqLen,
    rms_norm_eps: LLAMA2C_RMS_NORM_EPS,
    rope_theta: ropeTheta,
    rope_scaling: null,
    attention_bias: false,
    mlp_bias: false,
    tie_word_embeddings: h.sharedClassifier,
    bos_token_id: LLAMA2C_BOS_ID,
    eos_token_id: LLAMA2C_EOS_ID,
    hidden_act: 'silu',
    torch_dtype: 'float32',
    use_cache: true,
  };
}

/**
 * llama2.c's reference sampler stops when the model emits BOS: story models trained on
 * BOS-separated documents end a story by starting the next one. So both ids end generation.
 */
export function buildGenerationConfig(): Record<string, unknown> {
  return {
    bos_token_id: LLAMA2C_BOS_ID,
    eos_token_id: [LLAMA2C_EOS_ID, LLAMA2C_BOS_ID],
  };
}
