import type { Engine, FinishReason, GenerationDelta, PromptTokenLogprob, TokenLogprob } from '../engine/types.js';
import type { SamplingParams } from '../sampling/params.js';
import type { GenerationObserver } from './observability/activity.js';

/** Set when the run was cut (shutdown): the error its consumer sees in place of the next delta. */
interface CutState {
  error: Error | null;
}

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
    private readonly cutState: CutState,
    private readonly observer: GenerationObserver | undefined,
  ) {}

  /**
   * Submits the request and waits for its first delta, so that whatever the engine
   * refuses (or fails on) surfaces before any response status has been sent. `observer`
   * (the request's record) sees every delta, and may cut the run: the engine stops it and
   * the consumer gets the cut's error instead of the rest.
   */
  static async start(
    engine: Engine,
    promptTokenIds: number[],
    params: SamplingParams,
    clientSignal?: AbortSignal,
    observer?: GenerationObserver,
  ): Promise<GenerationRun> {
    const controller = new AbortController();
    const onClientGone = () => controller.abort();
    if (clientSignal?.aborted) controller.abort();
    clientSignal?.addEventListener('abort', onClientGone, { once: true });
    const detachClient = () => clientSignal?.removeEventListener('abort', onClientGone);
    const cutState: CutState = { error: null };
    observer?.submitted(promptTokenIds.length, (error) => {
      cutState.error ??= error;
      controller.abort();
    });
    try {
      const iterator = engine.generate({ promptTokenIds, params, signal: controller.signal })[Symbol.asyncIterator]();
      const first = await iterator.next();
      if (cutState.error !== null) throw cutState.error;
      if (!first.done) observer?.delta(first.value);
      return new GenerationRun(first, iterator, controller, detachClient, cutState, observer);
    } catch (error) {
      detachClient();
      observer?.ended(error);
      throw error;
    }
  }

  abort(): void {
    this.controller.abort();
    // A stream cancelled before its first pull never runs the iterator's finally.
    this.observer?.ended();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<GenerationDelta> {
    let failure: unknown;
    try {
      if (this.first.done) return;
      yield this.first.value;
      for (;;) {
        const next = await this.rest.next();
        if (this.cutState.error !== null) throw this.cutState.error;
        if (next.done) return;
        this.observer?.delta(next.value);
        yield next.value;
      }
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      this.observer?.ended(failure);
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
