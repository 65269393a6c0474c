import type { InferenceSession } from 'onnxruntime-common';
import { tokenizerJsonAsLoaded } from './loading/folder-layout.js';
import type { SamplingParams } from '../sampling/params.js';
import { HfTokenizer } from '../tokenizer/hf-tokenizer.js';
import type { HfTokenizerSource, TokenizerThread } from '../tokenizer/tokenizer-thread.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { BeamSearchGroup } from './beam-search.js';
import { checkBatching, DYNAMIC_INT8_TOLERANCE, EXACT_TOLERANCE, int8ActivationsOf, type BatchingMode } from './loading/batching-self-test.js';
import { checkPrefixReuse } from './prefix-cache/reuse-self-test.js';
import { kvBytesPerToken, planContext, type ContextPlan } from './context-length.js';
import { describeContract } from './loading/decoder-contract.js';
import { checkPromptTokenIds, EngineOverloadedError, EngineRequestError } from './errors.js';
import type { ModelFiles } from '../onnx/model-files.js';
import { modelSpecFromFiles, type ModelSpec } from '../onnx/model-spec.js';
import { generationDefaultsFromConfig } from './loading/generation-defaults.js';
import type { GpuKvStore } from './kv/gpu-kv-cache.js';
import type { KvPadding } from './kv/types.js';
import { OnnxDecoder, type Decoder } from './onnx-decoder.js';
import type { ModelThread } from './model-thread/thread-plan.js';
import { NO_PIPELINE, type PipelineSettings } from './model-thread/lanes.js';
import type { WorkerStart } from './model-thread/protocol.js';
import { TokenEmbedder } from './token-embedder.js';
import { VisionLanguageModel } from '../multimodal/model.js';
import { AudioLanguageModel } from '../multimodal/audio-model.js';
import type { OrtRuntime } from '../onnx/ort-runtime.js';
import { DEFAULT_SCHEDULER_LIMITS, type SchedulerLimits } from './scheduler-limits.js';
import { Scheduler } from './scheduler.js';
import { SamplingGroup, type RequestGroup } from './sequence-group.js';
import type { Engine, EngineFeatures, EngineStats, GenerateRequest, GenerationDelta, ModelInfo } from './types.js';
import type { PlaceholderEmbeds } from '../onnx/placeholder-embeds.js';
import { EngineLora, type LoraOptions } from './engine-lora.js';

/** What the engine loaded, for the startup report. */
export interface ModelLoadReport {
  /** The graph file inside the model folder, when known. */
  file: string | null;
  /** Graph + external data bytes. */
  bytes: number;
  dtype: string | null;
  numLayers: number;
  numKeyValueHeads: number;
  headDim: number;
  contextLength: number;
  /** The graph's inputs as fed (element types, optional inputs present). */
  contract: string;
  inputNames: readonly string[];
  batching: BatchingMode;
  /**
   * The batching self-test's largest relative logit difference, batched vs alone, per padding
   * side tried: what decided `batching` and the warning (batching-self-test.ts' tolerances).
   */
  batchingDifferences: Partial<Record<KvPadding, number>>;
  /** Prompts waiting together share a prefill call (the batching self-test's check). */
  prefillTogether: boolean;
  /** Prompts' KV is kept and reused by later prompts starting the same way (prefix-cache/); why not, when off. */
  prefixCaching: { on: true } | { on: false; reason: string };
  /** Long prompts arriving while rows decode are prefilled in slices between steps (chunked-prefill/); why not, when off. */
  chunkedPrefill: { on: true } | { on: false; reason: string };
  /** Session creation + self-test (warm-up), in ms. */
  loadMs: number;
  /** Facts worth a line at startup (a context cut by the tokenizer's limit). */
  notes: string[];
  /** Warnings to print at startup (batching off or changing outputs). */
  warnings: string[];
  /** A vision-language model's processor and encoder, for the startup report; null for text-only. */
  multimodal: string | null;
  /** An audio-language model's processor and encoder, for the startup report. */
  audio?: string | null;
  /** Which thread makes the model calls. */
  modelThread: ModelThread;
  /** Threads per model call and which thread makes it, and why; null when the runtime entry did not say. */
  threads: string | null;
}

export interface LocalEngineOptions {
  ort: OrtRuntime;
  files: ModelFiles;
  /** Name the model is served under (/v1/models, the `model` field). */
  servedModelName: string;
  sessionOptions?: InferenceSession.SessionOptions;
  limits?: Partial<SchedulerLimits>;
  /** WebGPU only: keep the KV cache in GPU buffers between steps (kv/gpu-kv-cache.ts). */
  gpuKv?: GpuKvStore;
  /**
   * Create the session from `files.onnxPath` rather than the bytes (onnxruntime-node), so
   * external data files are found beside the graph.
   */
  loadFromPath?: boolean;
  /** LoRA adapters (engine-lora.ts); absent: the plain graph only, `model` names the base model alone. */
  lora?: LoraOptions;
  /**
   * "worker": the session and the KV cache live in a worker thread (onnxruntime-node only;
   * model-thread/worker-decoder.ts), so this thread stays free during a step. Default "main".
   */
  modelThread?: ModelThread;
  /**
   * Starts the worker-thread decoder (worker mode). Passed in by the runtime entry that has
   * worker threads (runtime/node/engine.ts), so the engine's code imports no Node module.
   */
  startWorkerDecoder?: (start: WorkerStart) => Promise<Decoder>;
  /** How the thread settings were resolved, for the startup report. */
  threads?: string;
  /**
   * Worker mode: lanes whose steps overlap (model-thread/lanes.ts). Default: one lane
   * (no overlap); ignored on the main thread, where steps cannot overlap.
   */
  pipeline?: PipelineSettings;
  /**
   * Where text with long unbroken pieces is tokenized (tokenizer/tokenizer-thread.ts),
   * passed in by the runtime entry that has threads (Node); absent: on the event loop.
   */
  startTokenizerThread?: (source: HfTokenizerSource) => TokenizerThread;
}

/**
 * Generation on onnxruntime in this process: loads the model (decoder, tokenizer,
 * companion encoders, adapters), checks each request and turns it into a group of rows,
 * and hands the groups to the step loop (scheduler.ts). A request is a group of rows in
 * the batch: its n (or best_of) sampled sequences, or its beams.
 */
export class LocalEngine implements Engine {
  readonly info: ModelInfo;
  readonly features: EngineFeatures = { multipleSequences: true, beamSearch: true, logprobs: true };
  readonly generationDefaults: Partial<SamplingParams>;
  /** tokenizer_config.json, for the chat template and special tokens. */
  readonly tokenizerConfig: Record<string, unknown>;

  readonly limits: SchedulerLimits;
  readonly adapters: EngineLora | undefined;
  private readonly scheduler: Scheduler;

  private constructor(
    private readonly decoder: Decoder,
    readonly tokenizer: Tokenizer,
    readonly spec: ModelSpec,
    files: ModelFiles,
    servedModelName: string,
    limits: SchedulerLimits,
    readonly loadReport: ModelLoadReport,
    readonly multimodal: VisionLanguageModel | null,
    readonly embeddingSize: number | null,
    lora: EngineLora | null,
    readonly audio: AudioLanguageModel | null,
    pipeline: PipelineSettings,
  ) {
    this.adapters = lora ?? undefined;
    this.info = { id: servedModelName, maxModelLen: spec.maxPositionEmbeddings, vocabSize: spec.vocabSize, maxRunningSequences: limits.maxRunningSequences };
    if (multimodal !== null) this.info.acceptedMedia = multimodal.processor.videoPlaceholder !== undefined ? ['image', 'video'] : ['image'];
    if (audio !== null) this.info.acceptedMedia = [...(this.info.acceptedMedia ?? []), 'audio'];
    if (multimodal?.processor.videoSampling !== undefined) this.info.videoSampling = multimodal.processor.videoSampling;
    this.generationDefaults = generationDefaultsFromConfig(files.generationConfig);
    this.tokenizerConfig = files.tokenizerConfig;
    this.limits = limits;
    this.scheduler = new Scheduler(decoder, {
      limits,
      batching: loadReport.batching,
      prefillTogether: loadReport.prefillTogether,
      prefixCaching: loadReport.prefixCaching.on,
      chunkedPrefill: loadReport.chunkedPrefill.on,
      modelThread: loadReport.modelThread,
      pipeline,
      adapters: this.adapters,
    });
  }

  static async create(options: LocalEngineOptions): Promise<LocalEngine> {
    const { files } = options;
    const { spec: configSpec, notes } = modelSpecFromFiles(files);
    // No EOS in any config file: the tokenizer's own rule, never an empty list that would
    // stop nothing.
    const tokenizer = HfTokenizer.fromJson(tokenizerJsonAsLoaded(files.tokenizerJson, files.tokenizerConfig, files.config), files.tokenizerConfig, {
      eosTokenIds: configSpec.eosTokenIds.length > 0 ? configSpec.eosTokenIds : undefined,
      keepSource: options.startTokenizerThread !== undefined,
    });
    if (options.startTokenizerThread) tokenizer.offLoop = options.startTokenizerThread(tokenizer.takeSource()!);
    const spec = { ...configSpec, eosTokenIds: [...tokenizer.eosTokenIds] };
    const source = options.loadFromPath && files.onnxPath !== undefined ? files.onnxPath : files.onnx;
    const sessionOptions = files.externalData?.length
      ? { ...options.sessionOptions, externalData: files.externalData }
      : options.sessionOptions;
    const started = Date.now();
    const limits = { ...DEFAULT_SCHEDULER_LIMITS, ...options.limits };
    const graphLabel = files.onnxFile ?? 'The model graph';
    const companionSource = (graph: { onnx: Uint8Array; path?: string }) =>
      options.loadFromPath && graph.path !== undefined ? graph.path : graph.onnx;
    const embedTokens = files.companions?.embedTokens;
    const modelThread = options.modelThread ?? 'main';
    if (modelThread === 'worker' && options.gpuKv) throw new Error('A GPU-resident KV cache cannot be combined with modelThread "worker".');
    let decoder: Decoder;
    if (modelThread === 'worker') {
      if (!options.startWorkerDecoder) throw new Error('modelThread "worker" is not available in this runtime.');
      // The worker opens the graphs itself (by path: nothing is copied; bytes: copied once).
      decoder = await options.startWorkerDecoder({
        model: source,
        spec,
        sessionOptions: sessionOptions ?? {},
        graphLabel,
        embedTokens: embedTokens ? { model: companionSource(embedTokens), file: embedTokens.file, sessionOptions: options.sessionOptions ?? {} } : null,
      });
    } else {
      const embedder = embedTokens
        ? await TokenEmbedder.create(options.ort, companionSource(embedTokens), options.sessionOptions ?? {}, embedTokens.file)
        : null;
      try {
        decoder = await OnnxDecoder.create(options.ort, source, spec, sessionOptions, graphLabel, embedder, options.gpuKv);
      } catch (error) {
        await embedder?.dispose();
        throw error;
      }
      if (decoder.contract.input === 'ids') await embedder?.dispose();
    }
    // Companion encoders, the first forward pass and the adapters load one after another;
    // a failure in any of them releases everything loaded before it.
    let multimodal: VisionLanguageModel | null = null;
    let audio: AudioLanguageModel | null = null;
    let check: Awaited<ReturnType<typeof checkBatching>>;
    let prefixCaching: ModelLoadReport['prefixCaching'] = { on: false, reason: 'the enable_prefix_caching setting is false' };
    let chunkedPrefill: ModelLoadReport['chunkedPrefill'] = { on: false, reason: 'the enable_chunked_prefill setting is false' };
    let lora: EngineLora | null = null;
    const { visionEncoder, audioEncoder } = files.companions ?? {};
    const needsEmbeds = (encoderFile: string, media: string) => {
      if (decoder.contract.input !== 'embeds') {
        throw new Error(`${encoderFile} is present, but ${graphLabel} takes input_ids, so ${media} features have nowhere to go.`);
      }
    };
    const companionLoad = {
      ort: options.ort,
      tokenToId: (token: string) => tokenizer.tokenToId(token),
      sessionOptions: options.sessionOptions,
      loadFromPath: options.loadFromPath,
    };
    const configs = { config: files.config, preprocessorConfig: files.preprocessorConfig, processorConfig: files.processorConfig };
    let context: ContextPlan;
    try {
      context = planContext({
        modelContext: spec.maxPositionEmbeddings,
        maxSeqLen: limits.maxSeqLen,
        bytesPerToken: kvBytesPerToken(spec, decoder.contract.kvType),
        kvCacheMemoryBytes: limits.kvCacheMemoryBytes,
        maxRunningSequences: limits.maxRunningSequences,
      });
      if (visionEncoder !== undefined) {
        needsEmbeds(visionEncoder.file, 'image');
        multimodal = await VisionLanguageModel.load({ ...companionLoad, files: { ...configs, visionEncoder } });
        if (decoder.embeddingSize !== null) await multimodal.probe(decoder.embeddingSize);
      }
      if (audioEncoder !== undefined) {
        needsEmbeds(audioEncoder.file, 'audio');
        audio = await AudioLanguageModel.load({ ...companionLoad, files: { ...configs, audioEncoder } });
      }
      const int8Activations = int8ActivationsOf(files.onnx);
      try {
        check = await checkBatching(decoder, { int8Activations, crossRequestBatching: limits.crossRequestBatching });
      } catch (error) {
        throw new Error(`${graphLabel} failed its first forward pass: ${(error as Error).message}`);
      }
      // Prefix reuse and chunked prefill both continue a prompt on the KV of its first tokens.
      if (limits.enablePrefixCaching || limits.enableChunkedPrefill) {
        // A graph rounding activations to int8 moves its logits as much between a prompt run whole and
        // continued as between a row alone and batched (batching-self-test.ts).
        const tolerance = int8Activations === null ? EXACT_TOLERANCE[decoder.contract.kvType] : DYNAMIC_INT8_TOLERANCE;
        const reuse = await checkPrefixReuse(decoder, tolerance);
        const verdict: ModelLoadReport['prefixCaching'] = reuse.ok
          ? { on: true }
          : {
              on: false,
              reason: `a prompt continued from its first tokens' KV gave logits different from the prompt run whole (${
                Number.isFinite(reuse.difference) ? `${(reuse.difference * 100).toFixed(2)}% relative difference` : 'the graph refused the feeds'
              })`,
            };
        if (limits.enablePrefixCaching) prefixCaching = verdict;
        if (limits.enableChunkedPrefill) chunkedPrefill = verdict;
        if (!verdict.on) notes.push(`Prefix caching and chunked prefill are off for this graph: ${verdict.reason}.`);
      }
      if (options.lora) {
        lora = await EngineLora.create(decoder, files, spec, options.servedModelName, options.lora, sessionOptions, {
          nativeExternalData: Boolean(options.loadFromPath) && (files.weightBytes ?? files.onnx.byteLength) > files.onnx.byteLength,
          label: graphLabel,
        });
      }
    } catch (error) {
      await decoder.dispose();
      await multimodal?.dispose();
      await audio?.dispose();
      throw error;
    }
    limits.maxRunningSequences = context.maxRunningSequences;
    notes.unshift(...context.notes);
    const servedSpec = { ...spec, maxPositionEmbeddings: context.contextLength };
    const loadReport: ModelLoadReport = {
      file: files.onnxFile ?? null,
      bytes: files.weightBytes ?? files.onnx.byteLength,
      dtype: files.dtype ?? null,
      numLayers: spec.numLayers,
      numKeyValueHeads: spec.numKeyValueHeads,
      headDim: spec.headDim,
      contextLength: context.contextLength,
      contract: describeContract(decoder.contract),
      inputNames: decoder.contract.inputNames,
      batching: check.mode,
      batchingDifferences: check.differences,
      prefillTogether: check.prefillTogether,
      prefixCaching,
      chunkedPrefill,
      loadMs: Date.now() - started,
      notes,
      warnings: check.warnings,
      multimodal: multimodal?.describe() ?? null,
      audio: audio?.describe() ?? null,
      modelThread,
      threads: options.threads ?? null,
    };
    const embeddingSize = decoder.contract.input === 'embeds' ? (decoder.contract.embedsSize ?? decoder.embeddingSize ?? null) : null;
    return new LocalEngine(decoder, tokenizer, servedSpec, files, options.servedModelName, limits, loadReport, multimodal, embeddingSize, lora, audio, options.pipeline ?? NO_PIPELINE);
  }

  /**
   * Queues a request. Throws at once (before any output) when the request is invalid
   * (EngineRequestError) or the waiting queue is full (EngineOverloadedError).
   */
  generate(request: GenerateRequest): AsyncIterable<GenerationDelta> {
    const { waiting } = this.scheduler;
    if (waiting.length >= this.limits.maxWaitingRequests) {
      throw new EngineOverloadedError(
        `The server is busy: ${waiting.length} requests are already waiting. Retry later.`,
        Math.max(1, Math.ceil(this.limits.waitingDeadlineMs / 10_000)),
      );
    }
    const group = this.createGroup(request);
    if (request.requestKey !== undefined) group.requestKey = request.requestKey;
    if (request.adapter !== undefined) {
      const adapter = this.adapters?.registry.get(request.adapter);
      if (adapter === undefined) throw new EngineRequestError(`The model \`${request.adapter}\` does not exist.`);
      group.adapter = adapter;
    }
    const { signal } = request;
    const onAbort = () => this.scheduler.abort(group);
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    this.scheduler.enqueue(group, request.placeholders);
    const { scheduler } = this;
    return {
      async *[Symbol.asyncIterator]() {
        try {
          let first = true;
          for await (const delta of group.deltas) {
            if (first) {
              first = false;
              const queueSeconds = group.admittedAt === undefined ? undefined : Math.max(0, group.admittedAt - group.enqueuedAt) / 1000;
              yield { ...delta, cachedPromptTokens: group.cachedPromptTokens ?? 0, queueSeconds };
            } else {
              yield delta;
            }
          }
        } finally {
          signal?.removeEventListener('abort', onAbort);
          // A consumer that stops reading (client gone, error downstream) ends the request.
          if (!group.finished) scheduler.abort(group);
        }
      },
    };
  }

  brokenReason(): string | null {
    return this.decoder.brokenReason?.() ?? null;
  }

  stats(): EngineStats {
    const { counters, waiting, prefixCache } = this.scheduler;
    const stats: EngineStats = {
      ...counters,
      running: this.scheduler.rowsRunning() + waiting.length,
      kvCacheUsage: Math.min(1, this.scheduler.kvBytesRunning() / this.limits.kvCacheMemoryBytes),
    };
    if (prefixCache !== null) {
      const { queries, hits, entries } = prefixCache.stats();
      stats.prefixCache = { queries, hits, keptSequences: entries };
    }
    return stats;
  }

  async dispose(): Promise<void> {
    await this.scheduler.stop();
    await this.decoder.dispose();
    await this.multimodal?.dispose();
    await this.audio?.dispose();
  }

  private createGroup(request: GenerateRequest): RequestGroup {
    const { promptTokenIds, params } = request;
    const { vocabSize, maxPositionEmbeddings } = this.spec;
    checkPromptTokenIds(promptTokenIds, vocabSize, maxPositionEmbeddings);
    this.checkPlaceholders(promptTokenIds, request.placeholders ?? []);
    const n = params.n ?? 1;
    const bestOf = params.bestOf ?? n;
    if (!Number.isInteger(n) || n < 1 || !Number.isInteger(bestOf) || bestOf < n) {
      throw new EngineRequestError(`n must be an integer >= 1 and best_of an integer >= n, got n=${n} and best_of=${bestOf}.`);
    }
    const limits = { vocabSize, maxModelLen: maxPositionEmbeddings, eosTokenIds: this.spec.eosTokenIds };
    if (!params.useBeamSearch) return new SamplingGroup(promptTokenIds, params, this.tokenizer, limits);
    if (params.guide !== undefined) {
      throw new EngineRequestError('Structured output cannot be combined with beam search: use sampling (use_beam_search false).');
    }
    return new BeamSearchGroup(promptTokenIds, params, this.tokenizer, limits);
  }

  /**
   * Image tokens must come with their features, and only from the media parts: a text
   * prompt that spells "<image>" itself would feed the token's bare embedding.
   */
  private checkPlaceholders(promptTokenIds: readonly number[], placeholders: readonly PlaceholderEmbeds[]): void {
    const size = this.embeddingSize;
    if (placeholders.length > 0 && size === null) {
      throw new EngineRequestError('This model takes token ids only; a prompt with media features cannot be fed to it.');
    }
    const tokenIds = new Set(placeholders.map((entry) => entry.tokenId));
    if (this.multimodal !== null) tokenIds.add(this.multimodal.imageTokenId);
    if (this.audio !== null) tokenIds.add(this.audio.audioTokenId);
    for (const tokenId of tokenIds) {
      const count = promptTokenIds.reduce((sum, id) => sum + (id === tokenId ? 1 : 0), 0);
      const features = placeholders.filter((entry) => entry.tokenId === tokenId).reduce((sum, entry) => sum + entry.embeds.length, 0);
      const given = size === null ? 0 : features / size;
      if (count !== given) {
        throw new EngineRequestError(
          `The prompt has ${count} "${this.tokenizer.idToToken(tokenId) ?? tokenId}" tokens but features for ${given}: ` +
            'image and audio tokens may only come from media parts.',
        );
      }
    }
  }
}
