/**
 * Turns an upstream's streamed `/v1/completions` chunks into GenerationDeltas. The text
 * the upstream streams is already final (it applied the stop strings), so it passes
 * through as is; what needs work is knowing how many tokens each chunk stands for.
 */
import type { FinishReason, GenerationDelta } from '../types.js';
import type { TokenIdSource } from './request.js';

/** Stands in for a generated token whose id the upstream did not report (counts stay exact). */
export const UNKNOWN_TOKEN_ID = -1;

interface CompletionChunkChoice {
  index?: number;
  text?: string;
  finish_reason?: string | null;
  stop_reason?: string | number | null;
  logprobs?: { tokens?: unknown; token_logprobs?: unknown } | null;
}

/** A streamed `/v1/completions` chunk, as far as it is read here. */
export interface CompletionChunk {
  choices?: CompletionChunkChoice[];
  usage?: { completion_tokens?: unknown } | null;
}

const FINISH_REASONS: ReadonlySet<string> = new Set(['stop', 'length', 'abort']);

function finishReason(value: string | null | undefined): FinishReason | null {
  if (value === null || value === undefined) return null;
  // OpenAI's other reasons (content_filter, ...) still mean the sequence ended normally.
  return FINISH_REASONS.has(value) ? (value as FinishReason) : 'stop';
}

/** vLLM's return_tokens_as_token_ids spelling: "token_id:123". */
function tokenIdsFromLogprobs(choice: CompletionChunkChoice): { ids: number[]; logprobs: number[] } | null {
  const tokens = choice.logprobs?.tokens;
  if (!Array.isArray(tokens)) return null;
  const ids: number[] = [];
  for (const token of tokens) {
    const match = typeof token === 'string' ? /^token_id:(\d+)$/.exec(token) : null;
    if (match === null) return null;
    ids.push(Number(match[1]));
  }
  const reported = choice.logprobs?.token_logprobs;
  const logprobs = ids.map((_, i) => (Array.isArray(reported) && typeof reported[i] === 'number' ? (reported[i] as number) : NaN));
  return { ids, logprobs };
}

function unknownTokens(count: number): { ids: number[]; logprobs: number[] } {
  return { ids: new Array<number>(count).fill(UNKNOWN_TOKEN_ID), logprobs: new Array<number>(count).fill(NaN) };
}

/**
 * Per request. Token counts come from the chunk's token ids when asked for
 * (`logprobs`), else from the running usage count (`continuous_usage_stats`); an upstream
 * that sends neither still gets exact totals from its final usage chunk, added to the
 * last delta, which is held back until the stream ends for that reason.
 */
export class CompletionChunkReader {
  private generated = 0;
  private pendingFinal: GenerationDelta | null = null;

  constructor(private readonly tokenIds: TokenIdSource) {}

  /** Deltas ready to hand on after this chunk (none while the final one waits for usage). */
  accept(chunk: CompletionChunk): GenerationDelta[] {
    const usageTotal = typeof chunk.usage?.completion_tokens === 'number' ? chunk.usage.completion_tokens : null;
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (choice === undefined) {
      if (usageTotal !== null) this.reconcile(usageTotal);
      return [];
    }
    if (this.pendingFinal !== null) return []; // nothing follows the finish but usage
    const tokens =
      (this.tokenIds === 'logprobs' ? tokenIdsFromLogprobs(choice) : null) ??
      unknownTokens(usageTotal !== null ? Math.max(0, usageTotal - this.generated) : 0);
    this.generated += tokens.ids.length;
    const delta: GenerationDelta = {
      index: 0,
      tokenIds: tokens.ids,
      logprobs: tokens.logprobs,
      text: choice.text ?? '',
      finishReason: finishReason(choice.finish_reason),
      stopReason: choice.stop_reason ?? null,
    };
    if (delta.finishReason === null) return [delta];
    this.pendingFinal = delta;
    return [];
  }

  /** The final delta once the stream is over; null when the upstream never finished the sequence. */
  finish(): GenerationDelta | null {
    return this.pendingFinal;
  }

  private reconcile(total: number): void {
    const missing = total - this.generated;
    if (missing <= 0 || this.pendingFinal === null) return;
    const extra = unknownTokens(missing);
    this.pendingFinal.tokenIds.push(...extra.ids);
    this.pendingFinal.logprobs.push(...extra.logprobs);
    this.generated = total;
  }
}
