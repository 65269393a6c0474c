import type { FinishReason, GenerationDelta } from '../engine/types.js';
import { streamingErrorPayload } from './errors.js';
import { collectOutput } from './generation.js';
import { unixSeconds } from './ids.js';
import { usageInfo, type StreamUsageOptions, type UsageInfo } from './usage.js';

/** The parts of a /v1/completions request the response is built from (already validated). */
export interface CompletionJob {
  /** "cmpl-…", the same on every chunk. */
  id: string;
  /** Echoed in `model`: the served model name. */
  model: string;
  promptTokenCount: number;
  usage: StreamUsageOptions;
}

interface CompletionChoice {
  index: number;
  text: string;
  logprobs: null;
  finish_reason: FinishReason | null;
  stop_reason: string | number | null;
}

export interface CompletionResponse {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: Array<CompletionChoice & { prompt_logprobs: null }>;
  usage: UsageInfo;
}

export interface CompletionChunk {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: CompletionChoice[];
  usage?: UsageInfo | null;
}

/** Runs a completion to the end and builds vLLM's CompletionResponse. */
export async function completeNonStreaming(run: AsyncIterable<GenerationDelta>, job: CompletionJob): Promise<CompletionResponse> {
  const output = await collectOutput(run);
  return {
    id: job.id,
    object: 'text_completion',
    created: unixSeconds(),
    model: job.model,
    choices: [
      {
        index: 0,
        text: output.text,
        logprobs: null,
        finish_reason: output.finishReason,
        stop_reason: output.stopReason,
        prompt_logprobs: null,
      },
    ],
    usage: usageInfo(job.promptTokenCount, output.tokenIds.length),
  };
}

/**
 * The SSE payloads of a streamed completion: one chunk per engine step (vLLM sends a
 * chunk per step even when the step's text is held back), finish_reason on the last,
 * optional usage chunk, then [DONE]. An engine failure mid-stream becomes an error
 * event followed by [DONE], as in vLLM.
 */
export async function* completionStream(run: AsyncIterable<GenerationDelta>, job: CompletionJob): AsyncGenerator<string> {
  const { id } = job;
  const created = unixSeconds();
  let completionTokens = 0;
  try {
    for await (const delta of run) {
      completionTokens += delta.tokenIds.length;
      const chunk: CompletionChunk = {
        id,
        object: 'text_completion',
        created,
        model: job.model,
        choices: [
          {
            index: delta.index,
            text: delta.text,
            logprobs: null,
            finish_reason: delta.finishReason,
            stop_reason: delta.stopReason,
          },
        ],
        usage: job.usage.continuousUsage ? usageInfo(job.promptTokenCount, completionTokens) : null,
      };
      yield JSON.stringify(chunk);
    }
    if (job.usage.includeUsage) {
      const usageChunk: CompletionChunk = {
        id,
        object: 'text_completion',
        created,
        model: job.model,
        choices: [],
        usage: usageInfo(job.promptTokenCount, completionTokens),
      };
      yield JSON.stringify(usageChunk);
    }
  } catch (error) {
    yield streamingErrorPayload(error);
  }
  yield '[DONE]';
}
