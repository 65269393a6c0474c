import type { EmbeddingPrompts, PoolingSpec } from './pooling-config.js';

/** One embeddings request as the engine takes it: its inputs already tokenized. */
export interface EmbedRequest {
  /** Token ids of each input, each non-empty and within the served context. */
  inputs: readonly (readonly number[])[];
  /** Matryoshka: keep the first this-many values (checked against the model by the caller). */
  dimensions?: number;
  /** Normalize the vectors; absent: as the model does (its Normalize module). */
  normalize?: boolean;
  /** Aborting drops the request's inputs that have not run yet. */
  signal?: AbortSignal;
}

/** What the HTTP layer needs of an engine serving embeddings (vLLM's "embed" task). */
export interface EmbeddingService {
  /** The length of a full embedding (the model's hidden size). */
  readonly width: number;
  readonly pooling: PoolingSpec;
  /** Sizes `dimensions` may ask for (config.json's matryoshka_dimensions / is_matryoshka); null: not a Matryoshka model. */
  readonly matryoshka: { dimensions: readonly number[] | 'any' } | null;
  /** config_sentence_transformers.json's prompts (instruction prefixes). */
  readonly prompts: EmbeddingPrompts;
  /** One vector per input, in order; inputs of concurrent requests share model calls. */
  embed(request: EmbedRequest): Promise<Float32Array[]>;
}
