import type { Engine, FinishReason, GenerateRequest, GenerationDelta } from '../engine/types.js';
import type { PromptTokenLogprob, TokenLogprob } from '../sampling/logprobs.js';
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
    /** What else the engine takes for this request: media features, a LoRA adapter's name. */
    extras: Pick<GenerateRequest, 'placeholders' | 'adapter' | 'requestKey'> = {},
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
      const iterator = engine.generate({ promptTokenIds, params, signal: controller.signal, ...extras })[Symbol.asyncIterator]();
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
    // Nor the engine's, parked after the first delta: ending it releases what it holds.
    void this.rest.return?.()?.catch(() => {});
  }

  /** Stops the run so that its consumer gets `error` at its next pull (a stream ended early). */
  cut(error: Error): void {
    this.cutState.error ??= error;
    this.controller.abort();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<GenerationDelta> {
    let failure: unknown;
    // The engine ended the request itself: there is nothing left to stop.
    let completed = this.first.done === true;
    try {
      if (this.first.done) return;
      yield this.first.value;
      for (;;) {
        const next = await this.rest.next();
        if (this.cutState.error !== null) throw this.cutState.error;
        if (next.done) {
          completed = true;
          return;
        }
        this.observer?.delta(next.value);
        yield next.value;
      }
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      this.observer?.ended(failure);
      this.detachClient();
      // Leaving early (consumer stopped, error downstream) must not leave the sequence
      // running. A run that completed is not aborted: an abort builds a DOMException
      // (its stack trace included), a cost every request paid for nothing.
      if (!completed && !this.controller.signal.aborted) this.controller.abort();
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
  /** Prompt tokens the engine reused from its prefix cache, counted on the output that got the run's first delta. */
  cachedPromptTokens: number;
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
        cachedPromptTokens: 0,
      };
      outputs.set(delta.index, output);
    }
    output.text += delta.text;
    output.tokenIds.push(...delta.tokenIds);
    output.logprobs.push(...delta.logprobs);
    if (delta.topLogprobs !== undefined) (output.topLogprobs ??= []).push(...delta.topLogprobs);
    if (delta.promptLogprobs !== undefined) output.promptLogprobs = delta.promptLogprobs;
    output.cachedPromptTokens += delta.cachedPromptTokens ?? 0;
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
    observer?: GenerationObserver,
    extras: Pick<GenerateRequest, 'adapter'> = {},
  ): Promise<MergedRuns> {
    const observers = observer === undefined ? undefined : fanInObservers(observer, inputs.length, stride);
    // One request to the scheduler: its prompts beyond the first count as its extra sequences.
    const shared = { ...extras, requestKey: {} };
    const started = await Promise.allSettled(
      inputs.map((input, run) => GenerationRun.start(engine, input.promptTokenIds, input.params, clientSignal, observers?.[run], shared)),
    );
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

  cut(error: Error): void {
    for (const run of this.runs) run.cut(error);
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

/**
 * One request's observer for several runs: it sees one submission (prompt tokens summed,
 * a cut that reaches every run), every run's deltas with choice indices as MergedRuns
 * numbers them, and one end once every run has ended.
 */
function fanInObservers(observer: GenerationObserver, runs: number, stride: number): GenerationObserver[] {
  let submitted = 0;
  let promptTokens = 0;
  const cuts: Array<(error: Error) => void> = [];
  let ended = 0;
  let firstError: unknown;
  return Array.from({ length: runs }, (_, run) => ({
    submitted(tokens: number, cut: (error: Error) => void) {
      promptTokens += tokens;
      cuts.push(cut);
      submitted += 1;
      if (submitted === runs) observer.submitted(promptTokens, (error) => cuts.forEach((cutRun) => cutRun(error)));
    },
    delta(delta: GenerationDelta) {
      observer.delta({ ...delta, index: run * stride + delta.index });
    },
    ended(error?: unknown) {
      ended += 1;
      firstError ??= error;
      if (ended === runs) observer.ended(firstError);
    },
  }));
}
