import type { SamplingParams } from '../../sampling/params.js';
import { HfTokenizer } from '../../tokenizer/hf-tokenizer.js';
import type { Tokenizer } from '../../tokenizer/types.js';
import { checkPromptTokenIds } from '../errors.js';
import type { ModelFiles } from '../../onnx/model-files.js';
import { modelSpecFromFiles } from '../../onnx/model-spec.js';
import { generationDefaultsFromConfig } from '../loading/generation-defaults.js';
import { CompletionChunkReader, type CompletionChunk } from './chunks.js';
import { UpstreamError, upstreamErrorBody, upstreamFailure, upstreamStreamFailure } from './errors.js';
import { completionRequestBody, type TokenIdSource } from './request.js';
import { sseDataPayloads } from './sse.js';
import type { Engine, EngineStats, GenerateRequest, GenerationDelta, ModelInfo } from '../types.js';

/** The global fetch's shape; a Worker service binding's `fetch` fits it too. */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface UpstreamOptions {
  /**
   * The upstream server's base URL: its root (http://10.0.0.5:8000) or its OpenAI base
   * (…/v1); requests go to …/v1/completions. With a service binding only the path
   * matters.
   */
  url: string;
  /** Defaults to the global fetch; pass a service binding's fetch to stay inside Cloudflare. */
  fetch?: FetchLike;
  /** Sent as `Authorization: Bearer …`. */
  apiKey?: string;
  /** The name the upstream serves the model under; defaults to our served name. */
  model?: string;
  /** Default 'usage', which any vLLM and this project's server support. */
  tokenIds?: TokenIdSource;
}

export interface RemoteEngineOptions {
  /** The model's files without the graph: the tokenizer runs here, the model upstream. */
  files: Omit<ModelFiles, 'onnx'>;
  servedModelName: string;
  upstream: UpstreamOptions;
}

/** …/v1/completions under the base URL, whether or not it already ends in /v1. */
export function completionsUrl(base: string): string {
  const url = new URL(base);
  const path = url.pathname.replace(/\/+$/, '');
  url.pathname = `${path}${path.endsWith('/v1') ? '' : '/v1'}/completions`;
  return url.toString();
}

async function readErrorBody(response: Response): Promise<unknown> {
  try {
    return JSON.parse(await response.text());
  } catch {
    return null;
  }
}

function parseChunk(payload: string): unknown {
  try {
    return JSON.parse(payload);
  } catch {
    throw new UpstreamError(`The upstream sent an event that is not JSON: ${payload.slice(0, 200)}`);
  }
}

/**
 * An engine that runs nowhere near here: generation is forwarded to an OpenAI-compatible
 * upstream (this project's Node server, vLLM, ...) as a streamed `/v1/completions` with
 * the prompt as token ids. Tokenizing, validation, chat templates and token counting stay
 * local, so an edge Worker can refuse bad requests and stream results without the model.
 * The upstream must serve the same model (same tokenizer and vocabulary).
 */
export class RemoteEngine implements Engine {
  readonly info: ModelInfo;
  readonly tokenizer: Tokenizer;
  readonly generationDefaults: Partial<SamplingParams>;
  /** tokenizer_config.json, for the chat template and special tokens (as LocalEngine exposes it). */
  readonly tokenizerConfig: Record<string, unknown>;

  private readonly url: string;
  private readonly fetch: FetchLike;
  private readonly headers: Record<string, string>;
  private readonly model: string;
  private readonly tokenIds: TokenIdSource;
  private readonly inFlight = new Set<AbortController>();
  private counters = { steps: 0, generatedTokens: 0 };

  constructor(options: RemoteEngineOptions) {
    const { files, upstream } = options;
    const { spec } = modelSpecFromFiles(files);
    // No EOS in the config files: the tokenizer's own, never an empty list.
    this.tokenizer = HfTokenizer.fromJson(files.tokenizerJson, files.tokenizerConfig, {
      eosTokenIds: spec.eosTokenIds.length > 0 ? spec.eosTokenIds : undefined,
    });
    this.info = { id: options.servedModelName, maxModelLen: spec.maxPositionEmbeddings, vocabSize: spec.vocabSize };
    this.generationDefaults = generationDefaultsFromConfig(files.generationConfig);
    this.tokenizerConfig = files.tokenizerConfig;
    this.url = completionsUrl(upstream.url);
    this.fetch = upstream.fetch ?? ((input, init) => fetch(input, init));
    this.headers = { 'content-type': 'application/json', accept: 'text/event-stream' };
    if (upstream.apiKey) this.headers.authorization = `Bearer ${upstream.apiKey}`;
    this.model = upstream.model ?? options.servedModelName;
    this.tokenIds = upstream.tokenIds ?? 'usage';
  }

  /**
   * Checks the request at once (EngineRequestError, like LocalEngine); the upstream is
   * contacted when iteration starts, and its refusals surface from the first `next()`.
   */
  generate(request: GenerateRequest): AsyncIterable<GenerationDelta> {
    checkPromptTokenIds(request.promptTokenIds, this.info.vocabSize, this.info.maxModelLen);
    return { [Symbol.asyncIterator]: () => this.stream(request) };
  }

  stats(): EngineStats {
    return { ...this.counters, running: this.inFlight.size };
  }

  async dispose(): Promise<void> {
    for (const controller of this.inFlight) controller.abort();
  }

  private async *stream(request: GenerateRequest): AsyncGenerator<GenerationDelta> {
    const controller = new AbortController();
    const { signal } = request;
    const onAbort = () => controller.abort();
    if (signal?.aborted) controller.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    this.inFlight.add(controller);
    try {
      const response = await this.post(request, controller.signal);
      if (response === null) {
        yield abortedDelta();
        return;
      }
      const reader = new CompletionChunkReader(this.tokenIds);
      try {
        for await (const payload of sseDataPayloads(response.body!)) {
          if (payload === '[DONE]') break;
          const chunk = parseChunk(payload);
          const error = upstreamErrorBody(chunk);
          if (error !== null) throw upstreamStreamFailure(error);
          for (const delta of reader.accept(chunk as CompletionChunk)) {
            this.count(delta);
            yield delta;
          }
        }
      } catch (error) {
        if (!controller.signal.aborted) throw error;
      }
      if (controller.signal.aborted) {
        yield abortedDelta();
        return;
      }
      const last = reader.finish();
      if (last === null) throw new UpstreamError('The upstream ended the stream before the generation finished.');
      this.count(last);
      yield last;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.inFlight.delete(controller);
      // A consumer that stops reading (client gone) must not leave the upstream generating.
      controller.abort();
    }
  }

  /** The upstream's streaming response, or null when we were aborted before it answered. */
  private async post(request: GenerateRequest, signal: AbortSignal): Promise<Response | null> {
    const body = completionRequestBody({
      model: this.model,
      promptTokenIds: request.promptTokenIds,
      params: request.params,
      tokenIds: this.tokenIds,
    });
    let response: Response;
    try {
      response = await this.fetch(this.url, { method: 'POST', headers: this.headers, body, signal });
    } catch (error) {
      if (signal.aborted) return null;
      // Already in the gateway's terms (a fleet's fetch: every upstream down, or a deadline passed).
      if (error instanceof UpstreamError) throw error;
      throw new UpstreamError(`Cannot reach the upstream at ${this.url}: ${(error as Error).message}`);
    }
    if (!response.ok) {
      throw upstreamFailure(response.status, upstreamErrorBody(await readErrorBody(response)), response.headers.get('retry-after'));
    }
    if (response.body === null) throw new UpstreamError('The upstream answered without a body.');
    return response;
  }

  private count(delta: GenerationDelta): void {
    this.counters.steps += 1;
    this.counters.generatedTokens += delta.tokenIds.length;
  }
}

/** What LocalEngine yields for an aborted sequence: no tokens, finish reason "abort". */
function abortedDelta(): GenerationDelta {
  return { index: 0, tokenIds: [], logprobs: [], text: '', finishReason: 'abort', stopReason: null };
}
