import type { FinishReason, GenerationDelta } from '../engine/types.js';
import { streamingErrorPayload } from './errors.js';
import { collectOutput } from './generation.js';
import { unixSeconds } from './ids.js';
import { usageInfo, type StreamUsageOptions, type UsageInfo } from './usage.js';

/** The parts of a /v1/chat/completions request the response is built from (already validated). */
export interface ChatJob {
  /** "chatcmpl-…", the same on every chunk. */
  id: string;
  model: string;
  promptTokenCount: number;
  /**
   * Role of the generated message: "assistant" when the template opened an assistant
   * turn, else the role of the final message being continued (vLLM's rule).
   */
  role: string;
  usage: StreamUsageOptions;
}

export interface ChatCompletionResponse {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: string; content: string; tool_calls: [] };
    logprobs: null;
    finish_reason: FinishReason;
    stop_reason: string | number | null;
  }>;
  usage: UsageInfo;
  prompt_logprobs: null;
}

interface ChatStreamChoice {
  index: number;
  delta: { role?: string; content?: string };
  logprobs: null;
  finish_reason: FinishReason | null;
  stop_reason?: string | number | null;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: ChatStreamChoice[];
  usage?: UsageInfo;
}

export async function chatNonStreaming(run: AsyncIterable<GenerationDelta>, job: ChatJob): Promise<ChatCompletionResponse> {
  const output = await collectOutput(run);
  return {
    id: job.id,
    object: 'chat.completion',
    created: unixSeconds(),
    model: job.model,
    choices: [
      {
        index: 0,
        message: { role: job.role, content: output.text, tool_calls: [] },
        logprobs: null,
        finish_reason: output.finishReason ?? 'stop',
        stop_reason: output.stopReason,
      },
    ],
    usage: usageInfo(job.promptTokenCount, output.tokenIds.length),
    prompt_logprobs: null,
  };
}

/**
 * The SSE payloads of a streamed chat completion, shaped as vLLM 0.6 sends them: a
 * first chunk with the role and empty content, one content chunk per engine step,
 * finish_reason and stop_reason on the last, the optional usage chunk, then [DONE].
 */
export async function* chatStream(run: AsyncIterable<GenerationDelta>, job: ChatJob): AsyncGenerator<string> {
  const { id } = job;
  const created = unixSeconds();
  const chunk = (choices: ChatStreamChoice[], usage?: UsageInfo): string => {
    const body: ChatCompletionChunk = { id, object: 'chat.completion.chunk', created, model: job.model, choices };
    if (usage) body.usage = usage;
    return JSON.stringify(body);
  };
  const continuous = (completionTokens: number) =>
    job.usage.continuousUsage ? usageInfo(job.promptTokenCount, completionTokens) : undefined;

  let completionTokens = 0;
  try {
    yield chunk(
      [{ index: 0, delta: { role: job.role, content: '' }, logprobs: null, finish_reason: null }],
      continuous(0),
    );
    for await (const delta of run) {
      completionTokens += delta.tokenIds.length;
      const choice: ChatStreamChoice = {
        index: delta.index,
        delta: { content: delta.text },
        logprobs: null,
        finish_reason: delta.finishReason,
      };
      if (delta.finishReason !== null) choice.stop_reason = delta.stopReason;
      yield chunk([choice], continuous(completionTokens));
    }
    if (job.usage.includeUsage) yield chunk([], usageInfo(job.promptTokenCount, completionTokens));
  } catch (error) {
    yield streamingErrorPayload(error);
  }
  yield '[DONE]';
}
