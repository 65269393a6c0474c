import type { FinishReason, GenerationDelta } from '../../engine/types.js';
import type { PreparedPrompt } from './spine.js';
import { GeneratedTokenReporter, completionLogprobs, type CompletionLogprobs, type PositionReport, type TokenNaming, type VllmLogprob } from '../../protocol/openai-logprobs.js';
import { yieldToEventLoop } from '../../threads/yield.js';
import { completionLogprobsInBlocks, generatedReportsInBlocks, promptPositionReportsInBlocks, vllmPromptLogprobsInBlocks } from '../logprob-chunks.js';
import { streamingErrorPayload } from '../errors.js';
import { collectOutputs } from '../generation.js';
import { unixSeconds } from '../ids.js';
import { usageInfo, type StreamUsageOptions, type UsageInfo } from '../usage.js';

/** The parts of a /v1/completions request the response is built from (already validated). */
export interface CompletionJob {
  /** "cmpl-…", the same on every chunk. */
  id: string;
  /** Echoed in `model`: the served model name. */
  model: string;
  promptTokenCount: number;
  usage: StreamUsageOptions;
  /** How tokens are named in logprobs; needed when `logprobs` or `echo` is set. */
  tokens?: TokenNaming;
  /** The request's `logprobs`: alternatives per token in the logprobs object; undefined: no object. */
  logprobs?: number;
  /** `echo`: the prompt's text, put before each choice's text (and its tokens before the logprobs). */
  echoText?: string;
  /**
   * A request with several prompts: each one's tokens and echo, for its choices
   * (prompt-major: choice i belongs to prompt ⌊i / choicesPerPrompt⌋). `promptTokenCount`
   * is then their sum; `tokens` and `echoText` are not read.
   */
  prompts?: ReadonlyArray<{ tokens?: TokenNaming; echoText?: string }>;
  choicesPerPrompt?: number;
}

/** One prompt of a completion request, as the spine runs it and the response names it. */
export interface CompletionPrompt extends PreparedPrompt {
  tokens: TokenNaming;
  echoText?: string;
}

/** The prompt a choice continues. */
function promptOf(job: CompletionJob, choiceIndex: number): { tokens?: TokenNaming; echoText?: string } {
  if (job.prompts === undefined) return job;
  return job.prompts[Math.floor(choiceIndex / (job.choicesPerPrompt ?? 1))]!;
}

interface CompletionChoice {
  index: number;
  text: string;
  logprobs: CompletionLogprobs | null;
  finish_reason: FinishReason | null;
  stop_reason: string | number | null;
}

export interface CompletionResponse {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: Array<CompletionChoice & { prompt_logprobs: Array<Record<string, VllmLogprob> | null> | null }>;
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

/** Each prompt's positions for echo and prompt_logprobs, computed once per prompt and response (yielding between blocks). */
function promptReportsOnce(
  job: CompletionJob,
): (choiceIndex: number, promptLogprobs: GenerationDelta['promptLogprobs'] | null) => Promise<PositionReport[]> {
  const reports = new Map<TokenNaming, Promise<PositionReport[]>>();
  return (choiceIndex, promptLogprobs) => {
    const tokens = promptOf(job, choiceIndex).tokens!;
    let report = reports.get(tokens);
    if (report === undefined) reports.set(tokens, (report = promptPositionReportsInBlocks(tokens, promptLogprobs ?? [])));
    return report;
  };
}

function generatedReporter(job: CompletionJob, choiceIndex: number): GeneratedTokenReporter {
  return new GeneratedTokenReporter(promptOf(job, choiceIndex).tokens!);
}

/** Runs a completion to the end and builds vLLM's CompletionResponse: one choice per returned sequence. */
export async function completeNonStreaming(run: AsyncIterable<GenerationDelta>, job: CompletionJob): Promise<CompletionResponse> {
  const outputs = await collectOutputs(run);
  const promptReports = promptReportsOnce(job);
  const choices = [];
  for (const output of outputs) {
    // Each choice's logprobs can be thousands of entries: the event loop runs between choices.
    if (job.logprobs !== undefined && choices.length > 0) await yieldToEventLoop();
    const { echoText } = promptOf(job, output.index);
    let logprobs: CompletionLogprobs | null = null;
    if (job.logprobs !== undefined) {
      const generated = await generatedReportsInBlocks(generatedReporter(job, output.index), output.tokenIds, output.logprobs, output.topLogprobs ?? undefined);
      // vLLM: with echo the prompt's tokens come first, the first of them without a logprob.
      const positions = echoText !== undefined ? [...(await promptReports(output.index, output.promptLogprobs)), ...generated] : generated;
      logprobs = await completionLogprobsInBlocks(positions, job.logprobs, 0);
    }
    choices.push({
      index: output.index,
      text: (echoText ?? '') + output.text,
      logprobs,
      finish_reason: output.finishReason,
      stop_reason: output.stopReason,
      prompt_logprobs: output.promptLogprobs !== null ? await vllmPromptLogprobsInBlocks(await promptReports(output.index, output.promptLogprobs)) : null,
    });
  }
  const completionTokens = outputs.reduce((sum, output) => sum + output.tokenIds.length, 0);
  return {
    id: job.id,
    object: 'text_completion',
    created: unixSeconds(),
    model: job.model,
    choices,
    usage: usageInfo(job.promptTokenCount, completionTokens),
  };
}

/**
 * The SSE payloads of a streamed completion: one chunk per engine step and sequence
 * (vLLM sends a chunk per step even when the step's text is held back), each naming its
 * choice by index, finish_reason on each choice's last, optional usage chunk, then
 * [DONE]. With echo, a choice's first chunk starts with the prompt. An engine failure
 * mid-stream becomes an error event followed by [DONE], as in vLLM.
 */
export async function* completionStream(run: AsyncIterable<GenerationDelta>, job: CompletionJob): AsyncGenerator<string> {
  const { id } = job;
  const created = unixSeconds();
  const promptReports = promptReportsOnce(job);
  const reporters = new Map<number, GeneratedTokenReporter>();
  const offsets = new Map<number, number>();
  let completionTokens = 0;
  try {
    for await (const delta of run) {
      completionTokens += delta.tokenIds.length;
      const first = !offsets.has(delta.index);
      const { echoText } = promptOf(job, delta.index);
      const echo = first && echoText !== undefined;
      let logprobs: CompletionLogprobs | null = null;
      if (job.logprobs !== undefined) {
        let reporter = reporters.get(delta.index);
        if (reporter === undefined) reporters.set(delta.index, (reporter = generatedReporter(job, delta.index)));
        const generated = reporter.report(delta.tokenIds, delta.logprobs, delta.topLogprobs);
        const positions = echo ? [...(await promptReports(delta.index, delta.promptLogprobs)), ...generated] : generated;
        const offset = offsets.get(delta.index) ?? 0;
        // A step's own positions are few; an echoed prompt's are many, shaped in blocks.
        logprobs = echo ? await completionLogprobsInBlocks(positions, job.logprobs, offset) : completionLogprobs(positions, job.logprobs, offset);
        offsets.set(delta.index, positions.reduce((end, position) => end + position.text.length, offset));
      } else {
        offsets.set(delta.index, 0);
      }
      const chunk: CompletionChunk = {
        id,
        object: 'text_completion',
        created,
        model: job.model,
        choices: [
          {
            index: delta.index,
            text: echo ? echoText + delta.text : delta.text,
            logprobs,
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
