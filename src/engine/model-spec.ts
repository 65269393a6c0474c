import type { SamplingParams } from '../sampling/params.js';

/** What the engine needs to know about a decoder-only model, read from its config files. */
export interface ModelSpec {
  numLayers: number;
  numKeyValueHeads: number;
  headDim: number;
  vocabSize: number;
  /** Context length: prompt + generated tokens never exceed it. */
  maxPositionEmbeddings: number;
  bosTokenId: number | null;
  /** generation_config.json's eos_token_id (int or list) wins over config.json's. */
  eosTokenIds: number[];
}

function positiveInt(config: Record<string, unknown>, key: string, fallback?: number): number {
  const value = config[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new Error(`config.json: "${key}" must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return value;
}

function idList(value: unknown): number[] {
  if (typeof value === 'number') return [value];
  if (Array.isArray(value)) return value.filter((v): v is number => typeof v === 'number');
  return [];
}

export function modelSpecFromConfig(
  config: Record<string, unknown>,
  generationConfig: Record<string, unknown> = {},
): ModelSpec {
  const hiddenSize = positiveInt(config, 'hidden_size');
  const numHeads = positiveInt(config, 'num_attention_heads');
  const eos = idList(generationConfig.eos_token_id);
  const bos = generationConfig.bos_token_id ?? config.bos_token_id;
  return {
    numLayers: positiveInt(config, 'num_hidden_layers'),
    numKeyValueHeads: positiveInt(config, 'num_key_value_heads', numHeads),
    headDim: positiveInt(config, 'head_dim', hiddenSize / numHeads),
    vocabSize: positiveInt(config, 'vocab_size'),
    maxPositionEmbeddings: positiveInt(config, 'max_position_embeddings'),
    bosTokenId: typeof bos === 'number' ? bos : null,
    eosTokenIds: eos.length > 0 ? eos : idList(config.eos_token_id),
  };
}

/**
 * The sampling defaults a model ships in generation_config.json, as vLLM reads them
 * (its get_diff_sampling_param): only fields a request may override.
 */
export function generationDefaultsFromConfig(generationConfig: Record<string, unknown> = {}): Partial<SamplingParams> {
  const defaults: Partial<SamplingParams> = {};
  const num = (key: string) => (typeof generationConfig[key] === 'number' ? (generationConfig[key] as number) : undefined);
  const temperature = num('temperature');
  const topK = num('top_k');
  const topP = num('top_p');
  const minP = num('min_p');
  const repetitionPenalty = num('repetition_penalty');
  if (temperature !== undefined) defaults.temperature = temperature;
  if (topK !== undefined) defaults.topK = topK;
  if (topP !== undefined) defaults.topP = topP;
  if (minP !== undefined) defaults.minP = minP;
  if (repetitionPenalty !== undefined) defaults.repetitionPenalty = repetitionPenalty;
  return defaults;
}
