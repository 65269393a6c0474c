/**
 * Logprob reports of a long prompt or output, built a block of positions at a time with
 * the event loop running between blocks: naming a 500-token prompt's 20 alternatives each
 * is ~10,000 decodes (0.4–0.8 s on a loaded machine), and shaping them another few hundred
 * ms, which must not hold /health or other streams' steps. Same results as the one-pass
 * functions of protocol/openai-logprobs.ts.
 */
import { yieldToEventLoop } from '../threads/yield.js';
import type { PromptTokenLogprob, TokenLogprob } from '../sampling/logprobs.js';
import {
  chatLogprobContent,
  completionLogprobs,
  PromptPositionReporter,
  vllmPromptLogprobs,
  type ChatLogprobContent,
  type CompletionLogprobs,
  type GeneratedTokenReporter,
  type PositionReport,
  type TokenNaming,
  type VllmLogprob,
} from '../protocol/openai-logprobs.js';

/** Positions per block: a few ms of naming or shaping. */
export const LOGPROB_BLOCK_POSITIONS = 32;

async function inBlocks<T>(length: number, each: (from: number, to: number) => T[]): Promise<T[]> {
  const out: T[] = [];
  for (let from = 0; from < length; from += LOGPROB_BLOCK_POSITIONS) {
    if (from > 0) await yieldToEventLoop();
    for (const item of each(from, Math.min(from + LOGPROB_BLOCK_POSITIONS, length))) out.push(item);
  }
  return out;
}

/** promptPositionReports, yielding between blocks. */
export function promptPositionReportsInBlocks(naming: TokenNaming, promptLogprobs: ReadonlyArray<PromptTokenLogprob | null>): Promise<PositionReport[]> {
  const reporter = new PromptPositionReporter(naming, promptLogprobs);
  return inBlocks(reporter.length, (from, to) => reporter.report(to - from));
}

/** vllmPromptLogprobs, yielding between blocks. */
export function vllmPromptLogprobsInBlocks(reports: readonly PositionReport[]): Promise<Array<Record<string, VllmLogprob> | null>> {
  return inBlocks(reports.length, (from, to) => vllmPromptLogprobs(reports.slice(from, to)));
}

/** A sequence's generated positions named by `reporter` (GeneratedTokenReporter.report), yielding between blocks. */
export function generatedReportsInBlocks(
  reporter: GeneratedTokenReporter,
  tokenIds: readonly number[],
  logprobs: readonly number[],
  topLogprobs?: readonly TokenLogprob[][],
): Promise<PositionReport[]> {
  return inBlocks(tokenIds.length, (from, to) => reporter.report(tokenIds.slice(from, to), logprobs.slice(from, to), topLogprobs?.slice(from, to)));
}

/** chatLogprobContent, yielding between blocks. */
export function chatLogprobContentInBlocks(reports: readonly PositionReport[]): Promise<ChatLogprobContent[]> {
  return inBlocks(reports.length, (from, to) => chatLogprobContent(reports.slice(from, to)));
}

/** completionLogprobs, yielding between blocks (each block's text offsets continue the last's). */
export async function completionLogprobsInBlocks(reports: readonly PositionReport[], topCount: number, initialOffset: number): Promise<CompletionLogprobs> {
  const out: CompletionLogprobs = { text_offset: [], token_logprobs: [], tokens: [], top_logprobs: [] };
  let offset = initialOffset;
  for (let from = 0; from < reports.length; from += LOGPROB_BLOCK_POSITIONS) {
    if (from > 0) await yieldToEventLoop();
    const block = reports.slice(from, from + LOGPROB_BLOCK_POSITIONS);
    const part = completionLogprobs(block, topCount, offset);
    out.text_offset.push(...part.text_offset);
    out.token_logprobs.push(...part.token_logprobs);
    out.tokens.push(...part.tokens);
    out.top_logprobs.push(...part.top_logprobs);
    for (const position of block) offset += position.text.length;
  }
  return out;
}
