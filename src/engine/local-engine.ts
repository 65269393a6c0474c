import type { InferenceSession } from 'onnxruntime-common';
import { tokenizerJsonAsLoaded } from './folder-layout.js';
import type { SamplingParams } from '../sampling/params.js';
import { HfTokenizer } from '../tokenizer/hf-tokenizer.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { BatchRunner, type JoiningRow } from './batch-runner.js';
import { BeamSearchGroup } from './beam-search.js';
import { checkBatching, type BatchingMode } from './batching-self-test.js';
import { kvBytesPerToken, planContext, type ContextPlan } from './context-length.js';
import { describeContract } from './decoder-contract.js';
import { graphHasOp } from './graph-ops.js';
import { checkPromptTokenIds, EngineOverloadedError, EngineRequestError } from './errors.js';
import type { ModelFiles } from './model-files.js';
import { generationDefaultsFromConfig, modelSpecFromFiles, type ModelSpec } from './model-spec.js';
import type { GpuKvStore } from './gpu-kv-cache.js';
import { OnnxDecoder, type Decoder } from './onnx-decoder.js';
import type { ModelThread } from './model-thread/thread-plan.js';
import { laneTakesRequest, NO_PIPELINE, type PipelineSettings } from './model-thread/lanes.js';
import type { WorkerStart } from './model-thread/protocol.js';
import { TokenEmbedder } from './token-embedder.js';
import { VisionLanguageModel } from '../multimodal/model.js';
import { AudioLanguageModel } from '../multimodal/audio-model.js';
import type { OrtRuntime } from './ort-runtime.js';
import { DEFAULT_SCHEDULER_LIMITS, type SchedulerLimits } from './scheduler-limits.js';
import { SamplingGroup, type RequestGroup } from './sequence-group.js';
import type { LoraAdapter } from '../adapters/peft-adapter.js';
import type { Engine, EngineFeatures, EngineStats, GenerateRequest, GenerationDelta, ModelInfo, PlaceholderEmbeds } from './types.js';
import { yieldToEventLoop } from './yield.js';
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
  /** WebGPU only: keep the KV cache in GPU buffers between steps (gpu-kv-cache.ts). */
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
   * worker threads (runtime/node-engine.ts), so the engine's code imports no Node module.
   */
  startWorkerDecoder?: (start: WorkerStart) => Promise<Decoder>;
  /** How the thread settings were resolved, for the startup report. */
  threads?: string;
  /**
   * Worker mode: lanes whose steps overlap (model-thread/lanes.ts). Default: one lane
   * (no overlap); ignored on the main thread, where steps cannot overlap.
   */
  pipeline?: PipelineSettings;
}

/** A batch of the running rows with its own step loop (more than one: model-thread/lanes.ts). */
interface Lane {
  index: number;
  runner: BatchRunner;
  loop: Promise<void> | null;
  /** Rows prefilled for this lane and not admitted yet. */
  joining: number;
}

/**
 * Generation on onnxruntime in this process. One step loop serves every request: it
 * prefills newly arrived prompts (once per request, however many sequences it asks
 * for), then decodes all running sequences together, one model call per step, and lets
 * the event loop breathe between steps. A request is a group of rows in the batch: its
 * n (or best_of) sampled sequences, or its beams.
 */
export class LocalEngine implements Engine {
  readonly info: ModelInfo;
  readonly features: EngineFeatures = { multipleSequences: true, beamSearch: true, logprobs: true };
  readonly generationDefaults: Partial<SamplingParams>;
  /** tokenizer_config.json, for the chat template and special tokens. */
  readonly tokenizerConfig: Record<string, unknown>;

  readonly limits: SchedulerLimits;
  readonly adapters: EngineLora | undefined;
  private readonly waiting: RequestGroup[] = [];
  /** Requests prefilled and not finished yet. */
  private readonly running = new Set<RequestGroup>();
  private readonly lanes: Lane[];
  private readonly pipelineMinRows: number;
  /** Worker mode: each step is sent before the last one's tokens are streamed (runLane). */
  private readonly launchEarly: boolean;
  /** Resolved when a lane's batch changes or a request arrives: wakes lanes that had nothing to do. */
  private change: { promise: Promise<void>; resolve: () => void } | null = null;
  private counters = { steps: 0, generatedTokens: 0 };
  /** Each model call serves one request: the graph cannot batch others, or the setting says so. */
  private readonly oneRequestPerStep: boolean;
  /** Media features of waiting requests, handed to their prefill. */
  private readonly placeholders = new WeakMap<RequestGroup, readonly PlaceholderEmbeds[]>();

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
    this.oneRequestPerStep = loadReport.batching.kind !== 'batched';
    const laneCount = this.oneRequestPerStep || loadReport.modelThread !== 'worker' ? 1 : Math.max(1, pipeline.lanes);
    this.pipelineMinRows = pipeline.minRows;
    this.launchEarly = loadReport.modelThread === 'worker';
    this.lanes = Array.from({ length: laneCount }, (_, index) => ({
      index,
      runner: new BatchRunner(decoder, {
        mode: limits.speculativeDecoding,
        numSpeculativeTokens: limits.numSpeculativeTokens,
        maxRows: limits.speculativeMaxSequences,
      }, loadReport.batching.kind === 'batched' ? loadReport.batching.padding : 'end'),
      loop: null,
      joining: 0,
    }));
    this.limits = limits;
  }

  static async create(options: LocalEngineOptions): Promise<LocalEngine> {
    const { files } = options;
    const { spec: configSpec, notes } = modelSpecFromFiles(files);
    // No EOS in any config file: the tokenizer's own rule, never an empty list that would
    // stop nothing.
    const tokenizer = HfTokenizer.fromJson(tokenizerJsonAsLoaded(files.tokenizerJson, files.tokenizerConfig, files.config), files.tokenizerConfig, {
      eosTokenIds: configSpec.eosTokenIds.length > 0 ? configSpec.eosTokenIds : undefined,
    });
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
      try {
        check = await checkBatching(decoder, {
          dynamicInt8: graphHasOp(files.onnx, 'DynamicQuantizeLinear'),
          crossRequestBatching: limits.crossRequestBatching,
        });
      } catch (error) {
        throw new Error(`${graphLabel} failed its first forward pass: ${(error as Error).message}`);
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
    if (this.waiting.length >= this.limits.maxWaitingRequests) {
      throw new EngineOverloadedError(
        `The server is busy: ${this.waiting.length} requests are already waiting. Retry later.`,
        Math.max(1, Math.ceil(this.limits.waitingDeadlineMs / 10_000)),
      );
    }
    const group = this.createGroup(request);
    if (request.placeholders !== undefined && request.placeholders.length > 0) this.placeholders.set(group, request.placeholders);
    if (request.adapter !== undefined) {
      const adapter = this.adapters?.registry.get(request.adapter);
      if (adapter === undefined) throw new EngineRequestError(`The model \`${request.adapter}\` does not exist.`);
      group.adapter = adapter;
    }
    const { signal } = request;
    const onAbort = () => this.abort(group);
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    this.waiting.push(group);
    this.ensureLoop();
    const engine = this;
    return {
      async *[Symbol.asyncIterator]() {
        try {
          yield* group.deltas;
        } finally {
          signal?.removeEventListener('abort', onAbort);
          // A consumer that stops reading (client gone, error downstream) ends the request.
          if (!group.finished) engine.abort(group);
        }
      },
    };
  }

  brokenReason(): string | null {
    return this.decoder.brokenReason?.() ?? null;
  }

  stats(): EngineStats {
    return { ...this.counters, running: this.rowsRunning() + this.waiting.length };
  }

  async dispose(): Promise<void> {
    for (const group of [...this.waiting, ...this.running]) this.abort(group);
    this.signalChange();
    await Promise.all(this.lanes.map((lane) => lane.loop));
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

  private abort(group: RequestGroup): void {
    if (group.finished) return;
    const queued = this.waiting.indexOf(group);
    if (queued >= 0) {
      this.waiting.splice(queued, 1);
      group.abort();
      return;
    }
    // Running: the loop ends it before the next step, so its rows leave the batch at once.
    group.abortRequested = true;
  }

  private ensureLoop(): void {
    for (const lane of this.lanes) {
      if (lane.loop) continue;
      lane.loop = this.runLane(lane).finally(() => {
        lane.loop = null;
        if (this.waiting.length > 0) this.ensureLoop();
      });
    }
    // Lanes that found nothing to take look again.
    this.signalChange();
  }

  private rowsRunning(): number {
    let rows = 0;
    for (const lane of this.lanes) rows += lane.runner.size;
    return rows;
  }

  private signalChange(): void {
    const change = this.change;
    this.change = null;
    change?.resolve();
  }

  private nextChange(): Promise<void> {
    if (this.change === null) {
      let resolve!: () => void;
      const promise = new Promise<void>((done) => (resolve = done));
      this.change = { promise, resolve };
    }
    return this.change.promise;
  }

  /** Ends aborted requests before the next step, so their rows leave the batch at once. */
  private endAborted(): void {
    for (const group of this.running) {
      if (group.abortRequested && !group.finished) group.abort();
      if (group.finished) this.running.delete(group);
    }
  }

  /**
   * One lane's step loop: admits what this lane takes of the waiting requests, steps its
   * batch, and lets the event loop breathe. A lane with no rows while requests wait for
   * a busy lane sleeps until something changes; with no rows and nothing waiting, it ends.
   *
   * In worker mode a step's successor is sent as soon as its tokens are picked, before the
   * event loop runs their consumers (SSE, HTTP): the worker computes while this thread
   * streams. Only a step that admits requests waits for the yield first (its prefills).
   */
  private async runLane(lane: Lane): Promise<void> {
    const { runner } = lane;
    let launched: Promise<() => number> | null = null;
    for (;;) {
      if (launched === null) {
        this.endAborted();
        const joining = await this.prefillWaiting(lane);
        runner.admitAndEvict(joining);
        lane.joining = 0;
        if (runner.size === 0) {
          if (this.waiting.length === 0) return;
          // Requests wait for another lane (it wakes this one when its batch changes), or for
          // the rows this lane just let go (the next pass admits them, after a yield).
          const othersBusy = this.lanes.some((other) => other !== lane && (other.runner.size > 0 || other.joining > 0));
          await (othersBusy ? this.nextChange() : yieldToEventLoop());
          continue;
        }
        launched = runner.launchStep();
      }
      try {
        const pickTokens = await launched;
        this.counters.generatedTokens += pickTokens();
        this.counters.steps += 1;
      } catch (error) {
        runner.failAll(error);
      }
      launched = null;
      if (this.launchEarly && this.waiting.length === 0) {
        this.endAborted();
        runner.admitAndEvict([]);
        if (runner.size > 0) launched = runner.launchStep();
      }
      if (this.lanes.length > 1) this.signalChange();
      await yieldToEventLoop();
    }
  }

  /** Whether `lane` takes the next waiting request (one lane: always). */
  private laneTakes(lane: Lane): boolean {
    if (this.lanes.length === 1) return true;
    const loads = this.lanes.map((each) => each.runner.size + each.joining);
    return laneTakesRequest(lane.index, loads, this.pipelineMinRows);
  }

  private async prefillWaiting(lane: Lane): Promise<JoiningRow[]> {
    this.refuseOverdue();
    const { runner } = lane;
    const joining: JoiningRow[] = [];
    // Every running sequence costs one token in the coming step; prompts share the rest.
    let budget = this.limits.maxBatchedTokens - runner.size;
    while (this.waiting.length > 0) {
      const next = this.waiting[0];
      const rowsNow = this.rowsRunning() + this.lanes.reduce((sum, each) => sum + each.joining, 0);
      const idle = rowsNow === 0;
      if (this.oneRequestPerStep && !idle) break;
      if (!idle && !this.laneTakes(lane)) break;
      // An idle engine always takes one request, so a prompt longer than the budget, or a
      // request with more sequences than the batch holds, still runs.
      if (!idle && rowsNow + next.width > this.limits.maxRunningSequences) break;
      if (!idle && next.promptTokenIds.length > budget) break;
      // Its adapter needs a slot; with every slot held by running requests' adapters it
      // waits (in order: the requests behind it wait too).
      if (next.adapter) {
        const slot = this.adapters!.slots.acquire(next.adapter, this.adaptersInUse(joining));
        if (slot === null) break;
        next.loraSlot = slot;
      }
      this.waiting.shift();
      budget -= next.promptTokenIds.length;
      // Counted while its prefill runs, so the other lanes balance against it.
      lane.joining += next.width;
      try {
        const { logits, cache } = await runner.prefill(next.promptTokenIds, next.needsPromptLogits, this.placeholders.get(next), next.loraSlot ?? -1);
        this.placeholders.delete(next);
        this.counters.steps += 1;
        const { rows, generated } = next.start(logits);
        this.counters.generatedTokens += generated;
        if (!next.finished) this.running.add(next);
        for (const row of rows) joining.push({ row, group: next, cache, cacheRow: 0 });
        lane.joining = joining.length;
      } catch (error) {
        next.fail(error);
      }
    }
    return joining;
  }

  /** Adapters of the requests in the batch or joining it: their slots must not be rewritten. */
  private adaptersInUse(joining: readonly JoiningRow[]): Set<LoraAdapter> {
    const inUse = new Set<LoraAdapter>();
    for (const group of this.running) if (group.adapter && !group.finished) inUse.add(group.adapter);
    for (const { group } of joining) {
      const adapter = (group as RequestGroup).adapter;
      if (adapter) inUse.add(adapter);
    }
    return inUse;
  }

  /** Refuses requests that waited for admission past the deadline, so their clients hear back. */
  private refuseOverdue(): void {
    const now = Date.now();
    const deadline = this.limits.waitingDeadlineMs;
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      const group = this.waiting[i];
      if (now - group.enqueuedAt > deadline) {
        this.waiting.splice(i, 1);
        group.fail(
          new EngineOverloadedError(`The request waited more than ${deadline} ms for a free slot. Retry later.`, 1),
        );
      }
    }
  }
}
