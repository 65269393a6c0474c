import type { FinishReason, GenerationDelta } from '../../engine/types.js';
import { GeneratedTokenReporter, chatLogprobContent, type ChatLogprobContent, type TokenNaming, type VllmLogprob } from '../../protocol/openai-logprobs.js';
import { chatLogprobContentInBlocks, generatedReportsInBlocks, promptPositionReportsInBlocks, vllmPromptLogprobsInBlocks } from '../logprob-chunks.js';
import { ToolCallStream, readMessage } from '../../tools/tool-call-stream.js';
import type { ToolCalling } from '../../tools/tool-choice.js';
import type { ToolCall, ToolCallDelta } from '../../tools/types.js';
import { streamingErrorPayload } from '../errors.js';
import { collectOutputs } from '../generation.js';
import { unixSeconds } from '../ids.js';
import { usageInfo, type StreamUsageOptions, type UsageInfo } from '../usage.js';

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
  /** `echo`: the final message's text, put before each choice's content (vLLM: only when it is the reply's role). */
  echoText?: string;
  /** How tool calls are read out of the output; null or absent: the output is all content. */
  tools?: ToolCalling | null;
}

/** vLLM's finish reasons, plus "tool_calls" for a choice that ended by calling tools. */
export type ChatFinishReason = FinishReason | 'tool_calls';

function finishReason(reason: FinishReason, calledTools: boolean, tools: ToolCalling | null | undefined): ChatFinishReason {
  return reason === 'stop' && calledTools && tools ? tools.finishReason : reason;
}

export interface ChatCompletionResponse {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: string; content: string | null; tool_calls: ToolCall[] };
    logprobs: ChatLogprobs | null;
    finish_reason: ChatFinishReason;
    stop_reason: string | number | null;
  }>;
  usage: UsageInfo;
  prompt_logprobs: Array<Record<string, VllmLogprob> | null> | null;
}

/** vLLM's ChatCompletionLogProbs. */
export interface ChatLogprobs {
  content: ChatLogprobContent[];
}

interface ChatStreamChoice {
  index: number;
  delta: { role?: string; content?: string; tool_calls?: ToolCallDelta[] };
  logprobs: ChatLogprobs | null;
  finish_reason: ChatFinishReason | null;
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
  const choices = [];
  for (const output of outputs) {
    const message = job.tools ? readMessage(job.tools.reader, output.text, job.tools.newCallId) : { content: output.text, toolCalls: [] };
    const content = job.echoText ? job.echoText + (message.content ?? '') : message.content;
    // Each choice's logprobs can be thousands of entries: named and shaped in blocks.
    const logprobs =
      job.logprobs !== undefined
        ? { content: await chatLogprobContentInBlocks(await generatedReportsInBlocks(generatedReporter(job), output.tokenIds, output.logprobs, output.topLogprobs ?? undefined)) }
        : null;
    choices.push({
      index: output.index,
      message: { role: job.role, content, tool_calls: message.toolCalls },
      logprobs,
      finish_reason: finishReason(output.finishReason ?? 'stop', message.toolCalls.length > 0, job.tools),
      stop_reason: output.stopReason,
    });
  }
  return {
    id: job.id,
    object: 'chat.completion',
    created: unixSeconds(),
    model: job.model,
    choices,
    usage: usageInfo(job.promptTokenCount, outputs.reduce((sum, output) => sum + output.tokenIds.length, 0)),
    prompt_logprobs:
      promptLogprobs !== null && naming !== undefined ? await vllmPromptLogprobsInBlocks(await promptPositionReportsInBlocks(naming, promptLogprobs)) : null,
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
  const toolStreams = new Map<number, ToolCallStream>();
  const toolStream = (index: number, tools: ToolCalling): ToolCallStream => {
    let stream = toolStreams.get(index);
    if (stream === undefined) toolStreams.set(index, (stream = new ToolCallStream(tools.reader, tools.newCallId)));
    return stream;
  };

  let completionTokens = 0;
  try {
    for (let index = 0; index < (job.n ?? 1); index++) {
      yield chunk([{ index, delta: { role: job.role, content: '' }, logprobs: null, finish_reason: null }], continuous(0));
      if (job.echoText) yield chunk([{ index, delta: { content: job.echoText }, logprobs: null, finish_reason: null }], continuous(0));
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
      if (job.tools) {
        const stream = toolStream(delta.index, job.tools);
        const message = stream.push(delta.text, delta.finishReason !== null);
        choice.delta = {};
        if (message.content !== undefined) choice.delta.content = message.content;
        if (message.toolCalls !== undefined) choice.delta.tool_calls = message.toolCalls;
        // A step whose text was all held back (a partial tag, a call's name not yet complete) sends nothing.
        if (message.content === undefined && message.toolCalls === undefined && delta.finishReason === null && logprobs === null) continue;
        if (delta.finishReason !== null) choice.finish_reason = finishReason(delta.finishReason, stream.calledTools, job.tools);
      }
      if (delta.finishReason !== null) choice.stop_reason = delta.stopReason;
      yield chunk([choice], continuous(completionTokens));
    }
    if (job.usage.includeUsage) yield chunk([], usageInfo(job.promptTokenCount, completionTokens));
  } catch (error) {
    yield streamingErrorPayload(error);
  }
  yield '[DONE]';
}
