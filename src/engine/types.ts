import type { PromptTokenLogprob, TokenLogprob } from '../sampling/logprobs.js';
import type { SamplingParams } from '../sampling/params.js';
import type { Tokenizer } from '../tokenizer/types.js';
import type { MediaKind } from '../media/types.js';
import type { VideoSampling } from '../media/decode/frame-sampling.js';
import type { VisionLanguageModel } from '../multimodal/model.js';
import type { AudioLanguageModel } from '../multimodal/audio-model.js';
import type { PlaceholderEmbeds } from '../onnx/placeholder-embeds.js';

/** Why a sequence ended. vLLM's finish_reason values plus our own for aborts. */
export type FinishReason = 'stop' | 'length' | 'abort';

export interface GenerateRequest {
  /** Prompt token ids, BOS included when the model wants one. */
  promptTokenIds: number[];
  params: SamplingParams;
  /** Aborting stops the sequence at the next step and frees its memory. */
  signal?: AbortSignal;
  /** A multimodal prompt's media features, spliced in at their placeholder tokens in prefill. */
  placeholders?: readonly PlaceholderEmbeds[];
  /** A loaded LoRA adapter's name (EngineAdapters); absent: the base model. */
  adapter?: string;
  /**
   * The client request this generation is part of, when it has several (the prompts of one
   * /v1/completions batch share one object): the scheduler counts the request's sequences
   * beyond its first as extra (maxExtraSequenceSlotPercent). Absent: a request of its own.
   */
  requestKey?: object;
}

/**
 * One step's output for one sequence. Text is only what became final this step: a
 * partial UTF-8 sequence, or text that could still turn out to be the start of a stop
 * string, is held back and released later (or dropped when the stop string matches).
 * The concatenation of all `text` fields equals the final output text.
 */
export interface GenerationDelta {
  /** Sequence index within the request: 0 .. n-1. */
  index: number;
  /** Tokens sampled this step (one per step today). */
  tokenIds: number[];
  /**
   * Log-probabilities of those tokens under the distribution SamplingParams.logprobsMode names (raw by default). NaN for greedy
   * tokens when neither logprobs nor best_of > n asked for them (the sampler then skips
   * the softmax: see sampling's tokenLogprobNeeded); `cumulativeLogprob` is NaN then too.
   */
  logprobs: number[];
  text: string;
  finishReason: FinishReason | null;
  /**
   * vLLM's stop_reason: the stop string or stop token id that ended the sequence;
   * null for EOS, length or abort.
   */
  stopReason: string | number | null;
  /**
   * When SamplingParams.logprobs is set: per token of `tokenIds`, the top alternatives
   * (that many), best first, under the same distribution as `logprobs`.
   */
  topLogprobs?: TokenLogprob[][];
  /** Sum of the sequence's token logprobs so far, this delta's tokens included. */
  cumulativeLogprob?: number;
  /**
   * When SamplingParams.promptLogprobs is set, on the first delta of each sequence: one
   * entry per prompt token, null for the first (nothing predicts it). Raw model
   * distribution: no sampling processor applies to the prompt.
   */
  promptLogprobs?: Array<PromptTokenLogprob | null>;
  /**
   * On the request's first delta (local engine): prompt tokens whose KV was reused from the
   * prefix cache (vLLM's num_cached_tokens, usage.prompt_tokens_details.cached_tokens).
   */
  cachedPromptTokens?: number;
  /** On the request's first delta (local engine): seconds it waited in the queue before its prefill. */
  queueSeconds?: number;
}

export interface ModelInfo {
  /** Name the model is served under. */
  id: string;
  /** Longest sequence (prompt + output) served: the model's context, lowered by maxSeqLen or the KV budget (context-length.ts). */
  maxModelLen: number;
  vocabSize: number;
  /** Sequences the engine runs together when fewer than the server's maxRunningSequences (a KV budget lowered it). */
  maxRunningSequences?: number;
  /** Media kinds the model takes (a vision-language model: image); absent for text-only models. */
  acceptedMedia?: readonly MediaKind[];
  /** How the model's family samples video frames (SmolVLM: by fps); absent: evenly. */
  videoSampling?: VideoSampling;
}

export interface EngineStats {
  /** Decode/prefill steps run since start (one session.run each). */
  steps: number;
  /** Sequences currently being generated. */
  running: number;
  /** Tokens generated since start, over all sequences. */
  generatedTokens: number;
  /**
   * Prefix caching (local engine with it on): prompt tokens looked up and, of those, reused
   * since start (vllm:prefix_cache_queries / _hits).
   */
  prefixCache?: { queries: number; hits: number; keptSequences: number };
  /** Share of the KV budget the running sequences hold, 0..1 (vllm:kv_cache_usage_perc); absent: not known. */
  kvCacheUsage?: number;
  /** Output generated for streams and not yet read by their clients, in bytes (engine/unread-output.ts); absent: not tracked. */
  unreadOutputBytes?: number;
}

/**
 * What an engine serves beyond one sampled sequence per request. The HTTP layer refuses,
 * with a 400 naming the parameter, any of these an engine does not declare (a remote
 * delegate that forwards one sequence must not silently drop the rest).
 */
export interface EngineFeatures {
  /** SamplingParams.n / bestOf above 1. */
  multipleSequences: boolean;
  /** SamplingParams.useBeamSearch. */
  beamSearch: boolean;
  /** SamplingParams.logprobs (top alternatives) and promptLogprobs. */
  logprobs: boolean;
  /**
   * Anything else of a request the engine cannot honour (an engine with its own sampler,
   * such as web-llm), each naming the request field; absent: nothing else.
   */
  refusals?(params: SamplingParams): Array<{ param: string; message: string }>;
}

/** A LoRA adapter the engine serves, for /v1/models. */
export interface AdapterInfo {
  name: string;
  /** Where it was loaded from. */
  path: string;
}

/** The LoRA adapters an engine serves by name (absent on engines without adapters). */
export interface EngineAdapters {
  list(): AdapterInfo[];
  has(name: string): boolean;
  /** Loads a PEFT adapter folder; rejects with the reason (already loaded, does not fit the base, ...). */
  load(name: string, path: string): Promise<void>;
  /** False when no adapter has that name. */
  unload(name: string): boolean;
  /** Whether /v1/load_lora_adapter and /v1/unload_lora_adapter may change the set. */
  readonly runtimeUpdates: boolean;
}

/** What the HTTP layer talks to. Implementations: the local onnxruntime engine, a remote delegate. */
export interface Engine {
  readonly info: ModelInfo;
  /** Absent: none of them. */
  readonly features?: EngineFeatures;
  readonly tokenizer: Tokenizer;
  /** Model defaults from generation_config.json, used when a request leaves a parameter out. */
  readonly generationDefaults: Partial<SamplingParams>;
  /** A vision-language model's processor and vision encoder; absent or null for text-only models. */
  readonly multimodal?: VisionLanguageModel | null;
  /** An audio-language model's feature extractor and audio encoder; absent or null without audio. */
  readonly audio?: AudioLanguageModel | null;
  /** Size of the decoder's input embeddings (what media features must match); null for id-fed decoders. */
  readonly embeddingSize?: number | null;
  /** LoRA adapters selectable by `model`; absent: the base model only. */
  readonly adapters?: EngineAdapters;
  generate(request: GenerateRequest): AsyncIterable<GenerationDelta>;
  stats(): EngineStats;
  /** Why the engine cannot generate right now (its model worker has died), or null; absent: never broken. */
  brokenReason?(): string | null;
  dispose(): Promise<void>;
}
