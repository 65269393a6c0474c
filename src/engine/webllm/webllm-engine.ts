/**
 * An Engine on @mlc-ai/web-llm (TVM-compiled WebGPU kernels), for the browser home. The
 * HTTP layer stays ours: it validates, applies the chat template and tokenizes with the
 * model folder's own tokenizer.json, and gets back per-token deltas exactly as from the
 * onnxruntime engine. web-llm runs the model and samples (its GenerationConfig, see
 * generation-config.ts); every token it samples is read back by id and goes through our
 * output processing (engine/sequence.ts: EOS, stop strings, stop token ids, max_tokens,
 * incremental detokenizing), so streams, finish reasons and the MindIE / OpenAI framing
 * are the same as on the other engines.
 *
 * web-llm runs one generation at a time per model; requests wait their turn on its lock.
 * It steps through MLCEngine's own prefill/decode (the methods its completions API runs)
 * so that each step's token id can be read and a gone client stops generation between
 * steps. Those methods are not in web-llm's typed API: the version is pinned (0.2.79).
 * n > 1 runs the n sequences one after another, each seeded as LocalEngine seeds it
 * (sequenceSeed); logprobs are read from the probabilities web-llm sampled from.
 */
import type { SamplingParams } from '../../sampling/params.js';
import { HfTokenizer } from '../../tokenizer/hf-tokenizer.js';
import type { Tokenizer } from '../../tokenizer/types.js';
import { checkPromptTokenIds, EngineRequestError } from '../errors.js';
import { generationDefaultsFromConfig } from '../loading/generation-defaults.js';
import { topTokenIds, type TokenLogprob } from '../../sampling/logprobs.js';
import { sequenceSeed } from '../sequence-group.js';
import { Sequence } from '../sequence.js';
import type { Engine, EngineFeatures, EngineStats, GenerateRequest, GenerationDelta, ModelInfo } from '../types.js';
import { webLlmGenerationConfig, webLlmRefusals, webLlmSeed, type WebLlmGenerationConfig } from './generation-config.js';

/** The pipeline of one loaded model (web-llm's LLMChatPipeline), as far as it is used here. */
export interface WebLlmPipeline {
  /** Every token sampled in the current round, in order (web-llm appends one per step). */
  outputIds: number[];
  stopped(): boolean;
  setSeed(seed: number): void;
  triggerStop(): void;
  /**
   * With GenerationConfig.logprobs: after each step, the probabilities the step's token
   * was drawn from (web-llm's softmax at the request's temperature, after logit_bias,
   * penalties and the grammar's mask), one per vocabulary entry.
   */
  logitsOnCPU?: { toArray(): ArrayLike<number> };
}

/** web-llm's per-model lock: one generation at a time. */
export interface WebLlmLock {
  acquire(): Promise<void>;
  release(): Promise<void>;
}

/** The MLCEngine members the engine drives (web-llm 0.2.79). */
export interface MlcEngineInternals {
  getLLMStates(requestName: string, modelId?: string): [string, WebLlmPipeline, unknown];
  loadedModelIdToLock: Map<string, WebLlmLock>;
  prefill(request: { prompt: string }, pipeline: WebLlmPipeline, chatConfig: unknown, genConfig: WebLlmGenerationConfig): Promise<void>;
  decode(pipeline: WebLlmPipeline, genConfig: WebLlmGenerationConfig): Promise<void>;
  unload(): Promise<void>;
}

/** An MLC model folder's files that the HTTP layer needs (the weights stay web-llm's). */
export interface MlcModelFiles {
  /** mlc-chat-config.json. */
  chatConfig: Record<string, unknown>;
  tokenizerJson: Record<string, unknown>;
  /** tokenizer_config.json (the chat template); {} when the folder has none. */
  tokenizerConfig: Record<string, unknown>;
}

export interface WebLlmEngineOptions {
  mlc: MlcEngineInternals;
  /** The model id web-llm loaded it under. */
  modelId: string;
  files: MlcModelFiles;
  servedModelName: string;
}

const FEATURES: EngineFeatures = {
  // n sequences one after another (best_of > n is refused by webLlmRefusals).
  multipleSequences: true,
  beamSearch: false,
  // Token logprobs and top alternatives (prompt_logprobs are refused by webLlmRefusals).
  logprobs: true,
  refusals: webLlmRefusals,
};

/** The step's token's logprob and the k most likely tokens, from web-llm's probabilities. */
function stepLogprobs(pipeline: WebLlmPipeline, tokenId: number, k: number): { logprob: number; top: TokenLogprob[] } {
  if (pipeline.logitsOnCPU === undefined) throw new Error('web-llm kept no distribution for the logprobs');
  const probs = pipeline.logitsOnCPU.toArray();
  // log(0) = -Infinity: a banned token, which topTokenIds leaves out as the sampler does.
  const logOf = (id: number) => Math.log(probs[id]);
  return { logprob: logOf(tokenId), top: topTokenIds(probs, k).filter((id) => probs[id] > 0).map((id) => ({ tokenId: id, logprob: logOf(id) })) };
}

function numberField(config: Record<string, unknown>, key: string): number {
  const value = config[key];
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new Error(`mlc-chat-config.json has no positive integer "${key}"`);
  }
  return value;
}

/** The ids that end a reply: the conversation template's stop tokens (what web-llm stops on). */
function stopTokenIds(config: Record<string, unknown>): number[] {
  const template = config.conv_template as { stop_token_ids?: unknown } | undefined;
  const ids = Array.isArray(template?.stop_token_ids) ? template.stop_token_ids.filter((id): id is number => Number.isInteger(id)) : [];
  const eos = config.eos_token_id;
  if (ids.length === 0 && Number.isInteger(eos)) ids.push(eos as number);
  return ids;
}

export class WebLlmEngine implements Engine {
  readonly info: ModelInfo;
  readonly features = FEATURES;
  readonly tokenizer: Tokenizer;
  readonly generationDefaults: Partial<SamplingParams>;
  /** tokenizer_config.json, for the chat template and special tokens (as LocalEngine exposes it). */
  readonly tokenizerConfig: Record<string, unknown>;

  private readonly mlc: MlcEngineInternals;
  private readonly modelId: string;
  private readonly eosTokenIds: number[];
  private counters = { steps: 0, generatedTokens: 0, running: 0 };

  constructor(options: WebLlmEngineOptions) {
    const { chatConfig } = options.files;
    this.mlc = options.mlc;
    this.modelId = options.modelId;
    this.eosTokenIds = stopTokenIds(chatConfig);
    this.tokenizer = HfTokenizer.fromJson(options.files.tokenizerJson, options.files.tokenizerConfig, {
      eosTokenIds: this.eosTokenIds.length > 0 ? this.eosTokenIds : undefined,
    });
    this.info = {
      id: options.servedModelName,
      maxModelLen: numberField(chatConfig, 'context_window_size'),
      vocabSize: numberField(chatConfig, 'vocab_size'),
    };
    // Not its repetition_penalty: web-llm never applies it (see webLlmRefusals).
    const { repetitionPenalty: _unapplied, ...defaults } = generationDefaultsFromConfig(chatConfig);
    this.generationDefaults = defaults;
    this.tokenizerConfig = options.files.tokenizerConfig;
  }

  generate(request: GenerateRequest): AsyncIterable<GenerationDelta> {
    checkPromptTokenIds(request.promptTokenIds, this.info.vocabSize, this.info.maxModelLen);
    const refusal = webLlmRefusals(request.params)[0];
    if (refusal !== undefined) throw new EngineRequestError(refusal.message);
    if (request.placeholders?.length) throw new EngineRequestError('web-llm serves text-only models here.');
    if (request.adapter !== undefined) throw new EngineRequestError('web-llm serves no LoRA adapters.');
    return { [Symbol.asyncIterator]: () => this.stream(request) };
  }

  stats(): EngineStats {
    return { ...this.counters };
  }

  async dispose(): Promise<void> {
    await this.mlc.unload();
  }

  private async *stream(request: GenerateRequest): AsyncGenerator<GenerationDelta> {
    const { params } = request;
    const [modelId, pipeline, chatConfig] = this.mlc.getLLMStates('CompletionCreateParams', this.modelId);
    const lock = this.mlc.loadedModelIdToLock.get(modelId);
    if (lock === undefined) throw new Error(`web-llm has no lock for the model ${modelId}`);
    const run: SequenceRun = {
      request,
      pipeline,
      chatConfig,
      genConfig: webLlmGenerationConfig(params),
      // web-llm tokenizes its prompt itself, with the same tokenizer.json: the text is what
      // our ids decode to, special tokens (the chat template's) included.
      prompt: this.tokenizer.decode(request.promptTokenIds, { skipSpecialTokens: false }),
    };
    await lock.acquire();
    this.counters.running += 1;
    try {
      for (let index = 0; index < (params.n ?? 1); index++) yield* this.runSequence(index, run);
    } finally {
      if (!pipeline.stopped()) pipeline.triggerStop();
      // A seed applies to its request only (web-llm reseeds from the clock as well).
      if (params.seed !== undefined) pipeline.setSeed(Date.now());
      this.counters.running -= 1;
      await lock.release();
    }
  }

  /** One of the request's sequences, from prefill to its end (the caller holds the lock). */
  private async *runSequence(index: number, run: SequenceRun): AsyncGenerator<GenerationDelta> {
    const { request, pipeline, genConfig } = run;
    const { params, signal } = request;
    const deltas: GenerationDelta[] = [];
    const sequence = new Sequence(
      index,
      request.promptTokenIds,
      // The constraint is web-llm's to enforce (its grammar matcher); ours only counts.
      { ...params, guide: undefined },
      this.tokenizer,
      { vocabSize: this.info.vocabSize, maxModelLen: this.info.maxModelLen, eosTokenIds: this.eosTokenIds },
      { sink: { emit: (delta) => deltas.push(delta), fail: () => {} } },
    );
    if (signal?.aborted) {
      yield sequence.abort();
      return;
    }
    const seed = sequenceSeed(params.seed, index);
    if (seed !== undefined) pipeline.setSeed(webLlmSeed(seed));
    let read = 0;
    try {
      await this.mlc.prefill({ prompt: run.prompt }, pipeline, run.chatConfig, genConfig);
      for (;;) {
        this.counters.steps += 1;
        // One token per step; web-llm stops on its own only at its max_tokens backstop or the context's end.
        const fresh = pipeline.outputIds.length - read;
        if (params.logprobs !== undefined && fresh > 1) throw new Error(`web-llm sampled ${fresh} tokens in one step; its logprobs cover the last one only`);
        while (read < pipeline.outputIds.length && !sequence.finished) {
          const tokenId = pipeline.outputIds[read++];
          if (params.logprobs === undefined) {
            sequence.append(tokenId, NaN);
          } else {
            const { logprob, top } = stepLogprobs(pipeline, tokenId, params.logprobs);
            sequence.append(tokenId, logprob, top);
          }
        }
        this.counters.generatedTokens += deltas.length;
        yield* deltas.splice(0);
        if (sequence.finished) return;
        if (signal?.aborted) {
          yield sequence.abort();
          return;
        }
        if (pipeline.stopped()) throw new Error('web-llm stopped generating before the sequence finished');
        await this.mlc.decode(pipeline, genConfig);
      }
    } finally {
      // The next sequence's prefill starts a new round.
      if (!pipeline.stopped()) pipeline.triggerStop();
    }
  }
}

/** What every sequence of one request shares. */
interface SequenceRun {
  request: GenerateRequest;
  pipeline: WebLlmPipeline;
  chatConfig: unknown;
  genConfig: WebLlmGenerationConfig;
  prompt: string;
}
