import type { SamplingParams } from '../sampling/params.js';
import type { Tokenizer } from '../tokenizer/types.js';

/** Why a sequence ended. vLLM's finish_reason values plus our own for aborts. */
export type FinishReason = 'stop' | 'length' | 'abort';

export interface GenerateRequest {
  /** Prompt token ids, BOS included when the model wants one. */
  promptTokenIds: number[];
  params: SamplingParams;
  /** Aborting stops the sequence at the next step and frees its memory. */
  signal?: AbortSignal;
}

/**
 * One step's output for one sequence. Text is only what became final this step: a
 * partial UTF-8 sequence, or text that could still turn out to be the start of a stop
 * string, is held back and released later (or dropped when the stop string matches).
 * The concatenation of all `text` fields equals the final output text.
 */
export interface GenerationDelta {
  /** Sequence index within the request (0 until n > 1 lands). */
  index: number;
  /** Tokens sampled this step (one per step today). */
  tokenIds: number[];
  /** Log-probabilities of those tokens under the processed distribution. */
  logprobs: number[];
  text: string;
  finishReason: FinishReason | null;
  /**
   * vLLM's stop_reason: the stop string or stop token id that ended the sequence;
   * null for EOS, length or abort.
   */
  stopReason: string | number | null;
}

export interface ModelInfo {
  /** Name the model is served under. */
  id: string;
  /** Longest sequence (prompt + output) the model supports: config max_position_embeddings. */
  maxModelLen: number;
  vocabSize: number;
}

export interface EngineStats {
  /** Decode/prefill steps run since start (one session.run each). */
  steps: number;
  /** Sequences currently being generated. */
  running: number;
  /** Tokens generated since start, over all sequences. */
  generatedTokens: number;
}

/** What the HTTP layer talks to. Implementations: the local onnxruntime engine, a remote delegate. */
export interface Engine {
  readonly info: ModelInfo;
  readonly tokenizer: Tokenizer;
  /** Model defaults from generation_config.json, used when a request leaves a parameter out. */
  readonly generationDefaults: Partial<SamplingParams>;
  generate(request: GenerateRequest): AsyncIterable<GenerationDelta>;
  stats(): EngineStats;
  dispose(): Promise<void>;
}
