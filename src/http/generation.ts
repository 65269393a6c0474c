import type { Engine, FinishReason, GenerationDelta, PromptTokenLogprob, TokenLogprob } from '../engine/types.js';
import type { SamplingParams } from '../sampling/params.js';

/**
 * One request's generation on the engine, tied to the client: it stops when the
 * client's signal fires (disconnect) or when `abort()` is called (stream cancelled).
 */
export class GenerationRun implements AsyncIterable<GenerationDelta> {
  private constructor(
    private readonly first: IteratorResult<GenerationDelta>,
    private readonly rest: AsyncIterator<GenerationDelta>,
    private readonly controller: AbortController,
    private readonly detachClient: () => void,
  ) {}

  /**
   * Submits the request and waits for its first delta, so that whatever the engine
   * refuses (or fails on) surfaces before any response status has been sent.
   */
  static async start(
    engine: Engine,
    promptTokenIds: number[],
    params: SamplingParams,
    clientSignal?: AbortSignal,
    /** A LoRA adapter's name; absent: the base model. */
    adapter?: string,
  ): Promise<GenerationRun> {
    const controller = new AbortController();
    const onClientGone = () => controller.abort();
    if (clientSignal?.aborted) controller.abort();
    clientSignal?.addEventListener('abort', onClientGone, { once: true });
    const detachClient = () => clientSignal?.removeEventListener('abort', onClientGone);
    try {
      const iterator = engine.generate({ promptTokenIds, params, signal: controller.signal, ...(adapter !== undefined ? { adapter } : {}) })[Symbol.asyncIterator]();
      const first = await iterator.next();
      return new GenerationRun(first, iterator, controller, detachClient);
    } catch (error) {
      detachClient();
      throw error;
    }
  }

  abort(): void {
    this.controller.abort();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<GenerationDelta> {
    try {
      if (this.first.done) return;
      yield this.first.value;
      for (;;) {
        const next = await this.rest.next();
        if (next.done) return;
        yield next.value;
      }
    } finally {
      this.detachClient();
      // Leaving early (consumer stopped, error downstream) must not leave the sequence running.
      if (!this.controller.signal.aborted) this.controller.abort();
      await this.rest.return?.();
    }
  }
}

/** Everything one finished sequence produced, for non-streaming responses. */
export interface FinalOutput {
  /** The sequence's index in the request (0 .. n-1). */
  index: number;
  text: string;
  tokenIds: number[];
  logprobs: number[];
  /** Per token, when the request asked for alternatives. */
  topLogprobs: TokenLogprob[][] | null;
  promptLogprobs: Array<PromptTokenLogprob | null> | null;
  cumulativeLogprob: number | null;
  finishReason: FinishReason | null;
  stopReason: string | number | null;
}

/** Runs a request to the end: one output per returned sequence, in index order. */
export async function collectOutputs(run: AsyncIterable<GenerationDelta>): Promise<FinalOutput[]> {
  const outputs = new Map<number, FinalOutput>();
  for await (const delta of run) {
    let output = outputs.get(delta.index);
    if (output === undefined) {
      output = {
        index: delta.index,
        text: '',
        tokenIds: [],
        logprobs: [],
        topLogprobs: null,
        promptLogprobs: null,
        cumulativeLogprob: null,
        finishReason: null,
        stopReason: null,
      };
      outputs.set(delta.index, output);
    }
    output.text += delta.text;
    output.tokenIds.push(...delta.tokenIds);
    output.logprobs.push(...delta.logprobs);
    if (delta.topLogprobs !== undefined) (output.topLogprobs ??= []).push(...delta.topLogprobs);
    if (delta.promptLogprobs !== undefined) output.promptLogprobs = delta.promptLogprobs;
    if (delta.cumulativeLogprob !== undefined) output.cumulativeLogprob = delta.cumulativeLogprob;
    if (delta.finishReason !== null) {
      output.finishReason = delta.finishReason;
      output.stopReason = delta.stopReason;
    }
  }
  return [...outputs.values()].sort((a, b) => a.index - b.index);
}
