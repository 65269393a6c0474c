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
  ): Promise<GenerationRun> {
    const controller = new AbortController();
    const onClientGone = () => controller.abort();
    if (clientSignal?.aborted) controller.abort();
    clientSignal?.addEventListener('abort', onClientGone, { once: true });
    const detachClient = () => clientSignal?.removeEventListener('abort', onClientGone);
    try {
      const iterator = engine.generate({ promptTokenIds, params, signal: controller.signal })[Symbol.asyncIterator]();
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

/**
 * Several runs of one request (one per prompt of a /v1/completions batch) as one stream:
 * deltas in the order they come, each renumbered prompt-major (run r's sequence i is
 * choice r·stride + i, vLLM's order). Stopping early stops every run.
 */
export class MergedRuns implements AsyncIterable<GenerationDelta> {
  private constructor(
    private readonly runs: readonly GenerationRun[],
    private readonly stride: number,
  ) {}

  /** Starts every run together; if one is refused, the others are stopped and its error thrown. */
  static async start(
    engine: Engine,
    inputs: ReadonlyArray<{ promptTokenIds: number[]; params: SamplingParams }>,
    stride: number,
    clientSignal?: AbortSignal,
  ): Promise<MergedRuns> {
    const started = await Promise.allSettled(inputs.map((input) => GenerationRun.start(engine, input.promptTokenIds, input.params, clientSignal)));
    const failed = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    const runs = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    if (failed) {
      // Their iterators never start, so only the abort frees their sequences.
      for (const run of runs) run.abort();
      throw failed.reason;
    }
    return new MergedRuns(runs, stride);
  }

  abort(): void {
    for (const run of this.runs) run.abort();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<GenerationDelta> {
    const iterators = this.runs.map((run) => run[Symbol.asyncIterator]());
    const pending = new Map<number, Promise<{ source: number; result: IteratorResult<GenerationDelta> }>>();
    const pull = (source: number) => {
      const next = iterators[source]!.next().then((result) => ({ source, result }));
      // Raced below; once the merge has ended, a late failure must not become an unhandled rejection.
      next.catch(() => {});
      pending.set(source, next);
    };
    iterators.forEach((_, source) => pull(source));
    try {
      while (pending.size > 0) {
        const { source, result } = await Promise.race(pending.values());
        if (result.done) {
          pending.delete(source);
          continue;
        }
        pull(source);
        yield { ...result.value, index: source * this.stride + result.value.index };
      }
    } finally {
      if (pending.size > 0) this.abort();
      await Promise.allSettled(iterators.map((iterator) => iterator.return?.()));
    }
  }
}
