/**
 * An engine serving an embedding model (vLLM's "embed" task, `--runner pooling`): requests'
 * inputs wait in one queue and run together, several inputs of several requests in one model
 * call. Fair by construction: each call takes inputs from the waiting requests in turn
 * (one from each, round and round), so a request of 2048 inputs arriving first does not hold
 * back one of a single input arriving after it; a call holds at most maxBatchedTokens padded
 * tokens and maxRunningSequences inputs. The model call itself leaves the event loop
 * (onnxruntime-node runs it on its own threads).
 *
 * Generation is refused with vLLM's answer for a pooling model.
 */
import { EngineOverloadedError, EngineRequestError } from '../engine/errors.js';
import type { Engine, EngineStats, GenerateRequest, GenerationDelta, ModelInfo } from '../engine/types.js';
import type { Tokenizer } from '../tokenizer/types.js';
import type { EmbeddingModel } from './embedding-model.js';
import { finishEmbedding } from './pooling.js';
import type { EmbeddingPrompts, PoolingSpec } from './pooling-config.js';
import type { EmbeddingService, EmbedRequest } from './types.js';

export interface EmbeddingEngineLimits {
  /** Inputs in one model call. */
  maxRunningSequences: number;
  /** Padded tokens (inputs × the longest) in one model call; one input longer than this runs alone. */
  maxBatchedTokens: number;
  /** Requests waiting at once; past it a request is refused (503). */
  maxWaitingRequests: number;
}

export interface EmbeddingEngineOptions {
  model: EmbeddingModel;
  tokenizer: Tokenizer;
  info: ModelInfo;
  width: number;
  pooling: PoolingSpec;
  matryoshka: EmbeddingService['matryoshka'];
  prompts: EmbeddingPrompts;
  limits: EmbeddingEngineLimits;
  /** Lines for the startup report. */
  notes?: string[];
}

/** One request's inputs in the queue. */
interface Waiting {
  request: EmbedRequest;
  results: Array<Float32Array | undefined>;
  /** The next input to schedule. */
  next: number;
  /** Inputs scheduled and not yet back. */
  inFlight: number;
  done: boolean;
  resolve(vectors: Float32Array[]): void;
  reject(error: unknown): void;
}

export class EmbeddingEngine implements Engine, EmbeddingService {
  readonly info: ModelInfo;
  readonly tokenizer: Tokenizer;
  readonly generationDefaults = {};
  readonly width: number;
  readonly pooling: PoolingSpec;
  readonly matryoshka: EmbeddingService['matryoshka'];
  readonly prompts: EmbeddingPrompts;
  readonly notes: readonly string[];
  private readonly model: EmbeddingModel;
  private readonly limits: EmbeddingEngineLimits;
  private readonly queue: Waiting[] = [];
  private running = false;
  private steps = 0;
  private embeddedTokens = 0;
  private disposed = false;

  constructor(options: EmbeddingEngineOptions) {
    this.model = options.model;
    this.tokenizer = options.tokenizer;
    this.info = options.info;
    this.width = options.width;
    this.pooling = options.pooling;
    this.matryoshka = options.matryoshka;
    this.prompts = options.prompts;
    this.limits = options.limits;
    this.notes = options.notes ?? [];
  }

  embed(request: EmbedRequest): Promise<Float32Array[]> {
    if (this.disposed) return Promise.reject(new EngineOverloadedError('The engine is shutting down.', 1));
    if (request.inputs.length === 0) return Promise.resolve([]);
    for (const input of request.inputs) {
      if (input.length === 0) return Promise.reject(new EngineRequestError('An input is empty: it must contain at least one token.'));
      if (input.length > this.info.maxModelLen) {
        return Promise.reject(new EngineRequestError(`An input has ${input.length} tokens; this model's context is ${this.info.maxModelLen} tokens.`));
      }
      for (const id of input) {
        if (!Number.isInteger(id) || id < 0 || id >= this.info.vocabSize) {
          return Promise.reject(new EngineRequestError(`Token id ${id} is out of vocabulary (valid ids are 0 to ${this.info.vocabSize - 1}).`));
        }
      }
    }
    if (this.queue.length >= this.limits.maxWaitingRequests) {
      return Promise.reject(new EngineOverloadedError(`The server is busy: ${this.queue.length} embedding requests are waiting (maxWaitingRequests).`, 1));
    }
    if (request.signal?.aborted) return Promise.reject(request.signal.reason);
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { request, results: new Array(request.inputs.length), next: 0, inFlight: 0, done: false, resolve, reject };
      this.queue.push(waiting);
      request.signal?.addEventListener('abort', () => this.fail(waiting, request.signal!.reason), { once: true });
      void this.pump();
    });
  }

  private fail(waiting: Waiting, error: unknown): void {
    if (waiting.done) return;
    waiting.done = true;
    const at = this.queue.indexOf(waiting);
    if (at >= 0) this.queue.splice(at, 1);
    waiting.reject(error);
  }

  /** The next model call's rows: inputs from the waiting requests in turn, within the call's bounds. */
  private nextBatch(): Array<{ waiting: Waiting; index: number }> {
    const batch: Array<{ waiting: Waiting; index: number }> = [];
    let longest = 0;
    let progress = true;
    while (progress && batch.length < this.limits.maxRunningSequences) {
      progress = false;
      for (const waiting of this.queue) {
        if (waiting.next >= waiting.request.inputs.length) continue;
        const length = waiting.request.inputs[waiting.next]!.length;
        const padded = Math.max(longest, length) * (batch.length + 1);
        if (batch.length > 0 && padded > this.limits.maxBatchedTokens) return batch;
        batch.push({ waiting, index: waiting.next });
        waiting.next += 1;
        waiting.inFlight += 1;
        longest = Math.max(longest, length);
        progress = true;
        if (batch.length >= this.limits.maxRunningSequences) return batch;
      }
    }
    return batch;
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (let batch = this.nextBatch(); batch.length > 0; batch = this.nextBatch()) {
        const rows = batch.map(({ waiting, index }) => waiting.request.inputs[index]!);
        let pooled: Float32Array[] | null = null;
        let failure: unknown = null;
        try {
          pooled = await this.model.embed(rows, this.pooling.mode);
        } catch (error) {
          failure = error;
        }
        this.steps += 1;
        for (const row of rows) this.embeddedTokens += row.length;
        batch.forEach(({ waiting, index }, row) => {
          waiting.inFlight -= 1;
          if (waiting.done) return;
          if (pooled === null) return this.fail(waiting, failure);
          waiting.results[index] = finishEmbedding(pooled[row]!, { dimensions: waiting.request.dimensions, normalize: waiting.request.normalize ?? this.pooling.normalize });
          if (waiting.next >= waiting.request.inputs.length && waiting.inFlight === 0) {
            waiting.done = true;
            this.queue.splice(this.queue.indexOf(waiting), 1);
            waiting.resolve(waiting.results as Float32Array[]);
          }
        });
      }
    } finally {
      this.running = false;
    }
  }

  async *generate(_request: GenerateRequest): AsyncIterable<GenerationDelta> {
    throw new EngineRequestError(`The model does not support Completions API: "${this.info.id}" is served for the "embed" task (an embedding model); use /v1/embeddings.`);
  }

  stats(): EngineStats {
    return { steps: this.steps, running: this.queue.length, generatedTokens: 0 };
  }

  /** Tokens embedded since start (for metrics and the bench). */
  get tokensEmbedded(): number {
    return this.embeddedTokens;
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    for (const waiting of [...this.queue]) this.fail(waiting, new EngineOverloadedError('The engine is shutting down.', 1));
    await this.model.dispose();
  }
}
