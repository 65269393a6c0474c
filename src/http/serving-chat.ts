import type { FinishReason, GenerationDelta } from '../engine/types.js';
import {
  GeneratedTokenReporter,
  chatLogprobContent,
  promptPositionReports,
  vllmPromptLogprobs,
  type ChatLogprobContent,
  type TokenNaming,
} from '../protocol/openai-logprobs.js';
import { streamingErrorPayload } from './errors.js';
import { collectOutputs } from './generation.js';
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
  /** Choices in the response (the request's n); 1 when absent. */
  n?: number;
  /** How tokens are named in logprobs; needed with `logprobs`. */
  tokens?: TokenNaming;
  /** The request's top_logprobs when it asked for logprobs; undefined: `logprobs` is null. */
  logprobs?: number;
}

export interface ChatCompletionResponse {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: string; content: string; tool_calls: [] };
    logprobs: ChatLogprobs | null;
    finish_reason: FinishReason;
    stop_reason: string | number | null;
  }>;
  usage: UsageInfo;
  prompt_logprobs: ReturnType<typeof vllmPromptLogprobs> | null;
}

/** vLLM's ChatCompletionLogProbs. */
export interface ChatLogprobs {
  content: ChatLogprobContent[];
}

interface ChatStreamChoice {
  index: number;
  delta: { role?: string; content?: string };
  logprobs: ChatLogprobs | null;
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

function generatedReporter(job: ChatJob): GeneratedTokenReporter {
  return new GeneratedTokenReporter(job.tokens!);
}

export async function chatNonStreaming(run: AsyncIterable<GenerationDelta>, job: ChatJob): Promise<ChatCompletionResponse> {
  const outputs = await collectOutputs(run);
  const promptLogprobs = outputs.find((output) => output.promptLogprobs !== null)?.promptLogprobs ?? null;
  const naming = job.tokens;
  return {
    id: job.id,
    object: 'chat.completion',
    created: unixSeconds(),
    model: job.model,
    choices: outputs.map((output) => ({
      index: output.index,
      message: { role: job.role, content: output.text, tool_calls: [] },
      logprobs:
        job.logprobs !== undefined
          ? { content: chatLogprobContent(generatedReporter(job).report(output.tokenIds, output.logprobs, output.topLogprobs ?? undefined)) }
          : null,
      finish_reason: output.finishReason ?? 'stop',
      stop_reason: output.stopReason,
    })),
    usage: usageInfo(job.promptTokenCount, outputs.reduce((sum, output) => sum + output.tokenIds.length, 0)),
    prompt_logprobs:
      promptLogprobs !== null && naming !== undefined
        ? vllmPromptLogprobs(promptPositionReports(naming, promptLogprobs))
        : null,
  };
}

/**
 * The SSE payloads of a streamed chat completion, shaped as vLLM 0.6 sends them: a
 * first chunk per choice with the role and empty content, one content chunk per engine
 * step and choice, finish_reason and stop_reason on each choice's last, the optional
 * usage chunk, then [DONE].
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
  const reporters = new Map<number, GeneratedTokenReporter>();

  let completionTokens = 0;
  try {
    for (let index = 0; index < (job.n ?? 1); index++) {
      yield chunk([{ index, delta: { role: job.role, content: '' }, logprobs: null, finish_reason: null }], continuous(0));
    }
    for await (const delta of run) {
      completionTokens += delta.tokenIds.length;
      let logprobs: ChatLogprobs | null = null;
      if (job.logprobs !== undefined) {
        let reporter = reporters.get(delta.index);
        if (reporter === undefined) reporters.set(delta.index, (reporter = generatedReporter(job)));
        logprobs = { content: chatLogprobContent(reporter.report(delta.tokenIds, delta.logprobs, delta.topLogprobs)) };
      }
      const choice: ChatStreamChoice = {
        index: delta.index,
        delta: { content: delta.text },
        logprobs,
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
