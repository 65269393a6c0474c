/**
 * An embedding model folder (onnx-community / Optimum layout plus sentence-transformers'
 * files), as a runtime entry read it, → a serving EmbeddingEngine. What the engine cannot
 * serve correctly is refused here, at startup, with the reason.
 */
import type { InferenceSession, OrtRuntime } from '../onnx/ort-runtime.js';
import { HfTokenizer } from '../tokenizer/hf-tokenizer.js';
import { EmbeddingEngine, type EmbeddingEngineLimits } from './embedding-engine.js';
import { EmbeddingGraphError, EmbeddingModel } from './embedding-model.js';
import { embeddingPromptsOf, matryoshkaOf, PoolingConfigError, poolingSpecOf, type PoolerOverride, type SentenceTransformersFiles } from './pooling-config.js';

export interface EmbeddingModelFiles extends SentenceTransformersFiles {
  config: Record<string, unknown>;
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  /** sentence_bert_config.json (max_seq_length, do_lower_case in the files before sentence-transformers 6). */
  sentenceBertConfig?: unknown;
  /** The graph: its bytes, or its path where onnxruntime opens files (Node). */
  onnx: Uint8Array | string;
  /** Where the graph came from inside the folder, for the report. */
  onnxFile: string;
}

export interface LoadEmbeddingOptions {
  ort: OrtRuntime;
  files: EmbeddingModelFiles;
  servedModelName: string;
  limits: EmbeddingEngineLimits;
  /** The server's maxSeqLen: the served context, below the model's. */
  maxSeqLen?: number | null;
  poolerOverride?: PoolerOverride;
  sessionOptions?: InferenceSession.SessionOptions;
  /** Lines leading the startup report (how the graph was made). */
  notes?: string[];
}

/** Model types whose attention is bidirectional (vLLM's encoder embedding families); others are decoders. */
const ENCODER_TYPES = new Set([
  'bert', 'roberta', 'xlm-roberta', 'distilbert', 'mpnet', 'modernbert', 'nomic_bert', 'electra', 'deberta',
  'deberta-v2', 'camembert', 'albert', 'jina_bert', 'new', 'gte', 'xlm-roberta-xl',
]);

/** RoBERTa's family numbers positions from padding_idx + 1: two of its position embeddings are never a token's. */
const PADDING_OFFSET_TYPES = new Set(['roberta', 'xlm-roberta', 'camembert', 'xlm-roberta-xl']);

/** The architectures a text-generation folder names; a folder naming one is a generation model unless told otherwise. */
export const GENERATION_ARCHITECTURE = /(ForCausalLM|ForConditionalGeneration|LMHeadModel)$/;

/**
 * `--runner auto` for a folder: pooling with sentence-transformers' modules.json, or for an
 * encoder family (BERT, XLM-R, ...) whose config.json names no generation architecture
 * (BertModel). A decoder without modules.json stays a generation model (UltravoxModel names no
 * *ForCausalLM yet generates): RUNNER=pooling serves such a folder for embeddings.
 */
export function looksLikeEmbeddingModel(config: Record<string, unknown>, hasModulesJson: boolean): boolean {
  if (hasModulesJson) return true;
  const architectures = Array.isArray(config.architectures) ? config.architectures.filter((a): a is string => typeof a === 'string') : [];
  const encoder = typeof config.model_type === 'string' && ENCODER_TYPES.has(config.model_type);
  return encoder && !architectures.some((a) => GENERATION_ARCHITECTURE.test(a));
}

function positiveInt(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : null;
}

/** The longest input, as vLLM derives it: position embeddings (RoBERTa's less two), sentence-transformers' max_seq_length, the server's maxSeqLen. */
export function embeddingContextOf(files: EmbeddingModelFiles, maxSeqLen: number | null | undefined): { maxModelLen: number; why: string } {
  return contextOf(files, typeof files.config.model_type === 'string' ? files.config.model_type : '', maxSeqLen);
}

function contextOf(files: EmbeddingModelFiles, modelType: string, maxSeqLen: number | null | undefined): { maxModelLen: number; why: string } {
  const positions = positiveInt(files.config.max_position_embeddings);
  if (positions === null) throw new PoolingConfigError('config.json has no max_position_embeddings: the context length is unknown.');
  let maxModelLen = PADDING_OFFSET_TYPES.has(modelType) ? positions - 2 : positions;
  let why = `config.json max_position_embeddings${PADDING_OFFSET_TYPES.has(modelType) ? ' - 2' : ''}`;
  const stMax = positiveInt((files.sentenceBertConfig as Record<string, unknown> | undefined)?.max_seq_length);
  if (stMax !== null && stMax < maxModelLen) [maxModelLen, why] = [stMax, 'sentence_bert_config.json max_seq_length'];
  if (maxSeqLen != null && maxSeqLen < maxModelLen) [maxModelLen, why] = [maxSeqLen, 'maxSeqLen'];
  return { maxModelLen, why };
}

export async function loadEmbeddingEngine(options: LoadEmbeddingOptions): Promise<EmbeddingEngine> {
  const { files } = options;
  const modelType = typeof files.config.model_type === 'string' ? files.config.model_type : '';
  const decoder = !ENCODER_TYPES.has(modelType);
  try {
    if ((files.sentenceBertConfig as Record<string, unknown> | undefined)?.do_lower_case === true) {
      throw new PoolingConfigError('sentence_bert_config.json asks for do_lower_case, which is not served (lower-case the text before sending it, and serve a copy without it).');
    }
    const pooling = poolingSpecOf(files, { decoder }, options.poolerOverride);
    const { maxModelLen, why } = contextOf(files, modelType, options.maxSeqLen);
    const tokenizer = HfTokenizer.fromJson(files.tokenizerJson, files.tokenizerConfig);
    const width = positiveInt(files.config.hidden_size);
    if (width === null) throw new PoolingConfigError('config.json has no hidden_size.');
    const heads = positiveInt(files.config.num_attention_heads);
    const kvHeads = positiveInt(files.config.num_key_value_heads) ?? heads ?? undefined;
    const headDim = positiveInt(files.config.head_dim) ?? (heads === null ? undefined : width / heads);
    const padTokenId = positiveInt(files.config.pad_token_id) ?? 0;
    const model = await EmbeddingModel.create(options.ort, files.onnx, { padTokenId, kvHeads, headDim }, options.sessionOptions);
    const vocabSize = Math.max(tokenizer.vocabSize, positiveInt(files.config.vocab_size) ?? 0);
    const prompts = embeddingPromptsOf(files.settings);
    const matryoshka = matryoshkaOf(files.config);
    const notes = [
      ...(options.notes ?? []),
      `Embedding model (${decoder ? 'decoder' : 'encoder'}, ${modelType || 'unknown type'}) from ${files.onnxFile}: ${width} dimensions, ` +
        `${pooling.mode === 'last' ? 'last-token' : pooling.mode.toUpperCase()} pooling${pooling.normalize ? ', normalized' : ''} (${pooling.source}); ` +
        `context ${maxModelLen} tokens (${why})`,
      matryoshka === null ? 'Matryoshka: no (`dimensions` is refused)' : `Matryoshka dimensions: ${matryoshka.dimensions === 'any' ? 'any' : matryoshka.dimensions.join(', ')}`,
    ];
    if (Object.keys(prompts.prompts).length > 0) notes.push(`Prompts (config_sentence_transformers.json): ${Object.keys(prompts.prompts).join(', ')}; /v1/embeddings embeds the text as sent, as vLLM does`);
    return new EmbeddingEngine({
      model,
      tokenizer,
      info: { id: options.servedModelName, maxModelLen, vocabSize },
      width,
      pooling,
      matryoshka,
      prompts,
      limits: options.limits,
      notes,
    });
  } catch (error) {
    if (error instanceof PoolingConfigError || error instanceof EmbeddingGraphError) {
      throw new Error(`The embedding model cannot be served: ${error.message}`);
    }
    throw error;
  }
}
