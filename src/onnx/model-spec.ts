
/** What the engine needs to know about a decoder-only model, read from its config files. */
export interface ModelSpec {
  numLayers: number;
  numKeyValueHeads: number;
  headDim: number;
  vocabSize: number;
  /** Context length: prompt + generated tokens never exceed it. */
  maxPositionEmbeddings: number;
  bosTokenId: number | null;
  /** Every EOS id the config files name (see modelSpecFromFiles); empty: the tokenizer's own. */
  eosTokenIds: number[];
}

/** Multimodal-family configs (gemma3, llava-style) keep the language model's fields in text_config. */
function languageModelConfig(config: Record<string, unknown>): Record<string, unknown> {
  const text = config.text_config;
  if (text === null || typeof text !== 'object' || Array.isArray(text)) return config;
  return { ...config, ...(text as Record<string, unknown>) };
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

/** tokenizer_config.json's EOS: eos_token_id, or the eos_token string (or AddedToken) looked up in tokenizer.json. */
function tokenizerEosIds(tokenizerConfig: Record<string, unknown>, tokenizerJson: Record<string, unknown> | undefined): number[] {
  const explicit = idList(tokenizerConfig.eos_token_id);
  if (explicit.length > 0) return explicit;
  const token = tokenizerConfig.eos_token;
  const content =
    typeof token === 'string' ? token : token !== null && typeof token === 'object' ? (token as { content?: unknown }).content : undefined;
  if (typeof content !== 'string' || tokenizerJson === undefined) return [];
  const added = Array.isArray(tokenizerJson.added_tokens) ? (tokenizerJson.added_tokens as Array<{ id?: unknown; content?: unknown }>) : [];
  const match = added.find((entry) => entry.content === content);
  if (typeof match?.id === 'number') return [match.id];
  const vocab = (tokenizerJson.model as { vocab?: unknown } | undefined)?.vocab;
  if (vocab !== null && typeof vocab === 'object' && !Array.isArray(vocab)) {
    const id = (vocab as Record<string, unknown>)[content];
    if (typeof id === 'number') return [id];
  }
  return [];
}

/** tokenizer_config.json's model_max_length, unless it is transformers' "no limit" sentinel (1e30). */
function tokenizerMaxLength(tokenizerConfig: Record<string, unknown>): number | undefined {
  const value = tokenizerConfig.model_max_length;
  return typeof value === 'number' && Number.isInteger(value) && value > 0 && value < 1e15 ? value : undefined;
}

export interface ModelSpecSources {
  config: Record<string, unknown>;
  generationConfig?: Record<string, unknown>;
  tokenizerConfig?: Record<string, unknown>;
  tokenizerJson?: Record<string, unknown>;
}

/**
 * The spec from a model's config files, with what a user should hear at startup (a
 * context length cut by the tokenizer's limit). Reads the fields llama, mistral, qwen2,
 * qwen3, phi3, gemma, gemma2, gemma3 (text_config) and smollm configs share: head_dim
 * when given (gemma's is not hidden_size / heads), num_key_value_heads defaulting to the
 * attention heads (multi-head attention). EOS ids: config.json's, then
 * generation_config.json's, then tokenizer_config.json's, all of them, in that order;
 * a source without any adds none (it never empties the list).
 */
export function modelSpecFromFiles(sources: ModelSpecSources): { spec: ModelSpec; notes: string[] } {
  const config = languageModelConfig(sources.config);
  const generationConfig = sources.generationConfig ?? {};
  const numHeads = positiveInt(config, 'num_attention_heads');
  const explicitHeadDim = config.head_dim;
  const headDim =
    explicitHeadDim !== undefined && explicitHeadDim !== null
      ? positiveInt(config, 'head_dim')
      : positiveInt({ head_dim: positiveInt(config, 'hidden_size') / numHeads }, 'head_dim');
  const eos: number[] = [];
  for (const id of [
    ...idList(sources.config.eos_token_id),
    ...idList(config.eos_token_id),
    ...idList(generationConfig.eos_token_id),
    ...tokenizerEosIds(sources.tokenizerConfig ?? {}, sources.tokenizerJson),
  ]) {
    if (!eos.includes(id)) eos.push(id);
  }
  const bos = generationConfig.bos_token_id ?? config.bos_token_id;
  const notes: string[] = [];
  let context = positiveInt(config, 'max_position_embeddings');
  const tokenizerLimit = tokenizerMaxLength(sources.tokenizerConfig ?? {});
  if (tokenizerLimit !== undefined && tokenizerLimit !== context) {
    const smaller = Math.min(context, tokenizerLimit);
    notes.push(
      `config.json's max_position_embeddings (${context}) and tokenizer_config.json's model_max_length (${tokenizerLimit}) ` +
        `disagree: the context is the smaller, ${smaller} tokens.`,
    );
    context = smaller;
  }
  return {
    spec: {
      numLayers: positiveInt(config, 'num_hidden_layers'),
      numKeyValueHeads: positiveInt(config, 'num_key_value_heads', numHeads),
      headDim,
      vocabSize: positiveInt(config, 'vocab_size'),
      maxPositionEmbeddings: context,
      bosTokenId: typeof bos === 'number' ? bos : null,
      eosTokenIds: eos,
    },
    notes,
  };
}

/** The spec from config.json and generation_config.json alone (see modelSpecFromFiles). */
export function modelSpecFromConfig(
  config: Record<string, unknown>,
  generationConfig: Record<string, unknown> = {},
): ModelSpec {
  return modelSpecFromFiles({ config, generationConfig }).spec;
}
