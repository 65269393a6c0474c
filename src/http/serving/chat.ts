import type { FinishReason, GenerationDelta } from '../../engine/types.js';
import { GeneratedTokenReporter, chatLogprobContent, type ChatLogprobContent, type TokenNaming, type VllmLogprob } from '../../protocol/openai-logprobs.js';
import { chatLogprobContentInBlocks, generatedReportsInBlocks, promptPositionReportsInBlocks, vllmPromptLogprobsInBlocks } from '../logprob-chunks.js';
import { ReasoningStream, readReasoning } from '../../reasoning/reasoning-stream.js';
import { ToolCallStream, readMessage } from '../../tools/tool-call-stream.js';
import type { ToolCalling } from '../../tools/tool-choice.js';
import type { ToolCall, ToolCallDelta } from '../../tools/types.js';
import { streamingErrorPayload } from '../errors.js';
import { collectOutputs } from '../generation.js';
import { unixSeconds } from '../ids.js';
import type { ChatReasoning } from './reasoning.js';
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
  /**
   * How a reasoning model's output splits into `reasoning` and content (the server's
   * reasoningParser); tool calls are read from the content only. Null or absent: no
   * `reasoning` field, the output is all content.
   */
  reasoning?: ChatReasoning | null;
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
    /** `reasoning` (current vLLM's name; llama.cpp's is reasoning_content) is there when the server has a reasoning parser. */
    message: { role: string; content: string | null; reasoning?: string | null; tool_calls: ToolCall[] };
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

export interface ChatStreamChoice {
  index: number;
  delta: { role?: string; content?: string; reasoning?: string; tool_calls?: ToolCallDelta[] };
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

/** What a dialect reading a chat stream keeps across its chunks (the usage chunk comes last, with no choices). */
export interface ChatStreamTally {
  inputTokens: number;
  outputTokens: number;
  finish: ChatFinishReason | null;
  stopReason: string | number | null | undefined;
}

/** A chat delta as the dialects read it: the thought under either name (vLLM's `reasoning`, llama.cpp's `reasoning_content`). */
export interface ChatStreamDelta {
  reasoning: string | undefined;
  content: string | undefined;
  toolCalls: ToolCallDelta[];
}

/**
 * The deltas of the first choice of a chat stream, for the dialects built on chat (/v1/messages,
 * /v1/responses, here and at the gateway): usage and finish are written into `tally` as they pass.
 */
export async function* firstChoiceDeltas(chunks: AsyncIterable<ChatCompletionChunk>, tally: ChatStreamTally): AsyncGenerator<ChatStreamDelta> {
  for await (const chunk of chunks) {
    if (chunk.usage !== undefined && chunk.choices.length === 0) {
      tally.inputTokens = chunk.usage.prompt_tokens;
      tally.outputTokens = chunk.usage.completion_tokens;
    }
    const choice = chunk.choices[0];
    if (choice === undefined) continue;
    const delta = choice.delta as typeof choice.delta & { reasoning_content?: string };
    yield { reasoning: delta.reasoning ?? delta.reasoning_content, content: delta.content, toolCalls: delta.tool_calls ?? [] };
    if (choice.finish_reason !== null) {
      tally.finish = choice.finish_reason;
      tally.stopReason = choice.stop_reason;
    }
  }
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
    // The thought first; calls are read from what follows it only.
    const parts = job.reasoning ? readReasoning(job.reasoning.parser, job.reasoning.promptEndsReasoning, output.text) : null;
    const text = parts ? (parts.content ?? '') : output.text;
    const message = job.tools ? readMessage(job.tools.reader, text, job.tools.newCallId) : { content: text, toolCalls: [] };
    // Nothing after the thought: content null, as vLLM has it.
    if (parts?.content === null && message.toolCalls.length === 0) message.content = null;
    const content = job.echoText ? job.echoText + (message.content ?? '') : message.content;
    // Each choice's logprobs can be thousands of entries: named and shaped in blocks.
    const logprobs =
      job.logprobs !== undefined
        ? { content: await chatLogprobContentInBlocks(await generatedReportsInBlocks(generatedReporter(job), output.tokenIds, output.logprobs, output.topLogprobs ?? undefined)) }
        : null;
    choices.push({
      index: output.index,
      message: {
        role: job.role,
        content,
        ...(parts ? { reasoning: job.reasoning!.include ? parts.reasoning : null } : {}),
        tool_calls: message.toolCalls,
      },
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
    usage: usageInfo(
      job.promptTokenCount,
      outputs.reduce((sum, output) => sum + output.tokenIds.length, 0),
      { enabled: job.usage.promptTokensDetails === true, cachedTokens: outputs.reduce((sum, output) => sum + output.cachedPromptTokens, 0) },
    ),
    prompt_logprobs:
      promptLogprobs !== null && naming !== undefined ? await vllmPromptLogprobsInBlocks(await promptPositionReportsInBlocks(naming, promptLogprobs)) : null,
  };
}

/**
 * The chunks of a streamed chat completion, shaped as vLLM 0.6 sends them: a first chunk
 * per choice with the role and empty content, one content chunk per engine step and
 * choice, finish_reason and stop_reason on each choice's last, then the optional usage
 * chunk. An error ends the iteration by throwing (the dialects built on chat chunks,
 * /v1/messages and /v1/responses, report it in their own shape).
 */
export async function* chatChunks(run: AsyncIterable<GenerationDelta>, job: ChatJob): AsyncGenerator<ChatCompletionChunk> {
  const { id } = job;
  const created = unixSeconds();
  const chunk = (choices: ChatStreamChoice[], usage?: UsageInfo): ChatCompletionChunk => {
    const body: ChatCompletionChunk = { id, object: 'chat.completion.chunk', created, model: job.model, choices };
    if (usage) body.usage = usage;
    return body;
  };
  let cachedTokens = 0;
  const usage = (completionTokens: number) =>
    usageInfo(job.promptTokenCount, completionTokens, { enabled: job.usage.promptTokensDetails === true, cachedTokens });
  const continuous = (completionTokens: number) => (job.usage.continuousUsage ? usage(completionTokens) : undefined);
  const reporters = new Map<number, GeneratedTokenReporter>();
  const toolStreams = new Map<number, ToolCallStream>();
  const toolStream = (index: number, tools: ToolCalling): ToolCallStream => {
    let stream = toolStreams.get(index);
    if (stream === undefined) toolStreams.set(index, (stream = new ToolCallStream(tools.reader, tools.newCallId)));
    return stream;
  };
  const reasoningStreams = new Map<number, ReasoningStream>();
  const reasoningStream = (index: number, reasoning: ChatReasoning): ReasoningStream => {
    let stream = reasoningStreams.get(index);
    if (stream === undefined) reasoningStreams.set(index, (stream = new ReasoningStream(reasoning.parser, reasoning.promptEndsReasoning)));
    return stream;
  };

  let completionTokens = 0;
  for (let index = 0; index < (job.n ?? 1); index++) {
    yield chunk([{ index, delta: { role: job.role, content: '' }, logprobs: null, finish_reason: null }], continuous(0));
    if (job.echoText) yield chunk([{ index, delta: { content: job.echoText }, logprobs: null, finish_reason: null }], continuous(0));
  }
  for await (const delta of run) {
    completionTokens += delta.tokenIds.length;
    cachedTokens += delta.cachedPromptTokens ?? 0;
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
    const final = delta.finishReason !== null;
    // The thought streams as `reasoning`; what follows it is content, read for calls.
    let contentText = delta.text;
    if (job.reasoning) {
      const parts = reasoningStream(delta.index, job.reasoning).push(delta.text, final);
      contentText = parts.content ?? '';
      choice.delta = {};
      if (parts.reasoning !== undefined && job.reasoning.include) choice.delta.reasoning = parts.reasoning;
      if (parts.content !== undefined) choice.delta.content = parts.content;
    }
    if (job.tools) {
      const stream = toolStream(delta.index, job.tools);
      const message = stream.push(contentText, final);
      const reasoning = choice.delta.reasoning;
      choice.delta = reasoning !== undefined ? { reasoning } : {};
      if (message.content !== undefined) choice.delta.content = message.content;
      if (message.toolCalls !== undefined) choice.delta.tool_calls = message.toolCalls;
      if (final) choice.finish_reason = finishReason(delta.finishReason!, stream.calledTools, job.tools);
    }
    // A step whose text was all held back (a partial tag, a call's name not yet complete) sends nothing.
    const empty = choice.delta.content === undefined && choice.delta.reasoning === undefined && choice.delta.tool_calls === undefined;
    if ((job.tools || job.reasoning) && empty && !final && logprobs === null) continue;
    if (delta.finishReason !== null) choice.stop_reason = delta.stopReason;
    yield chunk([choice], continuous(completionTokens));
  }
  if (job.usage.includeUsage) yield chunk([], usage(completionTokens));
}

/** The SSE payloads of a streamed chat completion: chatChunks as JSON, an error as the last event, then [DONE]. */
export async function* chatStream(run: AsyncIterable<GenerationDelta>, job: ChatJob): AsyncGenerator<string> {
  try {
    for await (const chunk of chatChunks(run, job)) yield JSON.stringify(chunk);
  } catch (error) {
    yield streamingErrorPayload(error);
  }
  yield '[DONE]';
}
