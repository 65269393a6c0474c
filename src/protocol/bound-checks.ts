/**
 * The request bounds (src/config/bound-settings.ts) checked on a request body that passed
 * its schema, before any work on it: no tokenizing, no template, no grammar. Each refusal
 * names the parameter and the setting that bounds it, so an operator can tell a client's
 * mistake from a limit to raise.
 *
 * The bounds read the request as its schema parsed it, never the body as sent: lax
 * coercion ("n": "1000000" → 1000000) has happened, so every bound judges the value the
 * server would act on (a raw body is not a BoundedRequest: the type refuses it). Field
 * names are the same on every route, so one function serves /generate, the OpenAI routes
 * and /tokenize.
 */
import type { RequestBounds } from '../config/bound-settings.js';
import { extraSequenceSlots } from '../engine/scheduler-limits.js';
import { invalidRequest } from '../common/protocol-error.js';
import { codePointLength } from './fields.js';
import { checkListBounds, type BoundedLists } from './list-bounds.js';

export interface RequestBoundsContext {
  bounds: RequestBounds;
  /** Sequences one engine step decodes (maxRunningSequences): a request wider than that could never run alongside others. */
  maxRunningSequences: number;
}

/** Characters (code points) of a string, counting only when UTF-16 units could exceed `limit`. */
function charsOver(text: string, limit: number): number | null {
  if (text.length <= limit) return null;
  const chars = codePointLength(text);
  return chars > limit ? chars : null;
}

/** Adds up the characters of every text in a prompt-like value, stopping early once past `limit`. */
function textChars(value: unknown, limit: number): number {
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && total <= limit) {
    const item = stack.pop();
    if (typeof item === 'string') total += item.length <= limit - total ? item.length : codePointLength(item);
    else if (Array.isArray(item)) for (const inner of item) stack.push(inner);
    else if (item !== null && typeof item === 'object') {
      const record = item as Record<string, unknown>;
      // Message contents and text parts; media references are bounded by the media limits.
      if (typeof record.text === 'string') stack.push(record.text);
      if (record.content !== undefined) stack.push(record.content);
    }
  }
  return total;
}

/**
 * The fields the bounds read, as the schemas output them (numbers are numbers, stop is a
 * list). Every field is optional: each route's request has the ones it knows.
 */
export interface BoundedRequest extends BoundedLists {
  n?: number;
  best_of?: number;
  prompt?: unknown;
  messages?: readonly unknown[];
  chat_template?: string;
  guided_json?: unknown;
  guided_regex?: unknown;
  guided_choice?: unknown;
  guided_grammar?: unknown;
  response_format?: unknown;
}

function integer(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/**
 * The most sequences one request may run, and why: maxSequencesPerRequest, or the share of
 * the batch one request may hold (maxRequestSlotPercent of maxRunningSequences), so a
 * request arriving beside the widest one still finds free rows and starts at the next step.
 */
export function requestSequenceLimit(ctx: RequestBoundsContext): { limit: number; reason: string } {
  const { maxSequencesPerRequest, maxRequestSlotPercent, maxExtraSequenceSlotPercent } = ctx.bounds;
  const share = Math.max(1, Math.floor((ctx.maxRunningSequences * maxRequestSlotPercent) / 100));
  // A request's sequences beyond its first must fit the extra share, or it could never start.
  const extraShare = 1 + extraSequenceSlots(ctx.maxRunningSequences, maxExtraSequenceSlotPercent);
  if (maxSequencesPerRequest <= Math.min(share, extraShare)) return { limit: maxSequencesPerRequest, reason: `maxSequencesPerRequest is ${maxSequencesPerRequest}` };
  if (share <= extraShare) {
    return {
      limit: share,
      reason: `maxRequestSlotPercent: one request may hold ${maxRequestSlotPercent}% of the ${ctx.maxRunningSequences} sequences one engine step decodes (maxRunningSequences)`,
    };
  }
  return {
    limit: extraShare,
    reason: `maxExtraSequenceSlotPercent: requests' sequences beyond their first may hold ${maxExtraSequenceSlotPercent}% of the ${ctx.maxRunningSequences} sequences one engine step decodes (maxRunningSequences)`,
  };
}

function checkSequences(body: BoundedRequest, ctx: RequestBoundsContext): void {
  const { limit, reason } = requestSequenceLimit(ctx);
  for (const param of ['n', 'best_of'] as const) {
    const value = integer(body[param]);
    if (value !== undefined && value > limit) {
      throw invalidRequest(`${param} must be at most ${limit} (${reason}), got ${value}.`, param);
    }
  }
  // /v1/completions with a list of prompts runs n (or best_of) sequences for each of them.
  const prompts = promptListLength(body.prompt);
  const perPrompt = Math.max(integer(body.n) ?? 1, integer(body.best_of) ?? 1);
  if (prompts * perPrompt > limit) {
    throw invalidRequest(
      `A request may run at most ${limit} sequences (${reason}): ${prompts} prompts × ${perPrompt} sequences each is ${prompts * perPrompt}.`,
      'prompt',
    );
  }
}

/** How many prompts a completions `prompt` holds: a list of texts or of token-id lists; 1 otherwise. */
function promptListLength(prompt: unknown): number {
  if (!Array.isArray(prompt) || prompt.length === 0) return 1;
  return prompt.every((item) => typeof item === 'number') ? 1 : prompt.length;
}

function checkPrompt(body: BoundedRequest, bounds: RequestBounds): void {
  const limit = bounds.maxPromptChars;
  for (const param of ['prompt', 'messages'] as const) {
    const value = body[param];
    if (value === undefined) continue;
    const chars = typeof value === 'string' ? (charsOver(value, limit) ?? 0) : textChars(value, limit);
    if (chars > limit) {
      throw invalidRequest(
        `${param} must have at most ${limit} characters of text (maxPromptChars), got ${typeof value === 'string' ? chars : `more than ${limit}`}.`,
        param,
      );
    }
  }
  const messages = body.messages;
  if (Array.isArray(messages) && messages.length > bounds.maxMessages) {
    throw invalidRequest(`messages must have at most ${bounds.maxMessages} messages (maxMessages), got ${messages.length}.`, 'messages');
  }
}

function checkStop(body: BoundedRequest, bounds: RequestBounds): void {
  // Counted once per distinct string: the list's size was judged after de-duplication.
  let chars = 0;
  for (const item of new Set(body.stop ?? [])) if (typeof item === 'string') chars += codePointLength(item);
  if (chars > bounds.maxStopChars) {
    throw invalidRequest(
      `stop must have at most ${bounds.maxStopChars} characters over all its strings (maxStopChars), got ${chars}.`,
      'stop',
    );
  }
}

function checkTemplate(body: BoundedRequest, bounds: RequestBounds): void {
  const template = body.chat_template;
  if (typeof template !== 'string') return;
  const chars = charsOver(template, bounds.maxChatTemplateChars);
  if (chars !== null) {
    throw invalidRequest(
      `chat_template must have at most ${bounds.maxChatTemplateChars} characters (maxChatTemplateChars), got ${chars}.`,
      'chat_template',
    );
  }
}

/** Characters of a constraint as sent, schemas measured as compact JSON; stops counting past `limit`. */
function sourceChars(value: unknown, limit: number): number {
  if (typeof value === 'string') return value.length;
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && total <= limit) {
    const item = stack.pop();
    if (typeof item === 'string') total += item.length + 2;
    else if (Array.isArray(item)) {
      total += 2 + item.length;
      for (const inner of item) stack.push(inner);
    } else if (item !== null && typeof item === 'object') {
      const entries = Object.entries(item);
      total += 2;
      for (const [key, inner] of entries) {
        total += key.length + 4;
        stack.push(inner);
      }
    } else total += String(item).length;
  }
  return total;
}

const GUIDED_SOURCE_FIELDS = ['guided_json', 'guided_regex', 'guided_choice', 'guided_grammar', 'response_format'] as const;

function checkGuidedSource(body: BoundedRequest, bounds: RequestBounds): void {
  const limit = bounds.maxGuidedSourceChars;
  for (const param of GUIDED_SOURCE_FIELDS) {
    const value = body[param];
    if (value === undefined || value === null) continue;
    const chars = sourceChars(value, limit);
    if (chars > limit) {
      throw invalidRequest(
        `${param} must be at most ${limit} characters (maxGuidedSourceChars), got ${typeof value === 'string' ? chars : `more than ${limit}`}.`,
        param,
      );
    }
  }
}

/**
 * Throws ProtocolError('invalid_request') for the first bound the body exceeds: sequences
 * (n, best_of), prompt and messages text, messages count, stop list, chat template size,
 * structured-output source size. Bounds inside a constraint (nesting, repetition, grammar
 * size) are checked where it is compiled (src/guided), before XGrammar sees it.
 */
export function checkRequestBounds(request: BoundedRequest, ctx: RequestBoundsContext): void {
  checkSequences(request, ctx);
  checkPrompt(request, ctx.bounds);
  checkListBounds(request, ctx.bounds);
  checkStop(request, ctx.bounds);
  checkTemplate(request, ctx.bounds);
  checkGuidedSource(request, ctx.bounds);
}

/**
 * The bounds of a request that runs no sequences (/v1/embeddings: its inputs share model
 * calls, so a list of inputs is not a list of sequences holding decode slots): text size and
 * list lengths only.
 */
export function checkInputBounds(request: BoundedRequest, bounds: RequestBounds): void {
  checkPrompt(request, bounds);
  checkListBounds(request, bounds);
}

/** What one prompt of a request will report in logprobs, once its sampling parameters are resolved. */
export interface LogprobWork {
  promptTokenCount: number;
  maxTokens: number;
  n?: number;
  bestOf?: number;
  /** Alternatives per generated token; undefined: no logprobs. */
  logprobs?: number;
  /** Alternatives per prompt token; undefined: none. */
  promptLogprobs?: number;
}

/**
 * The logprob entries (a token with one alternative) a request can make at most: per
 * sequence, each generated token with its alternatives and, with prompt logprobs (or
 * echo), each prompt token with its. A 3 KB request (500-token prompt, n=64, logprobs 20,
 * echo) made a 63.5 MB response; this is refused up front, from the worst case.
 */
export function checkLogprobBudget(work: readonly LogprobWork[], bounds: RequestBounds, param: string): void {
  let entries = 0;
  for (const prompt of work) {
    const sequences = Math.max(prompt.n ?? 1, prompt.bestOf ?? 1);
    if (prompt.logprobs !== undefined) entries += sequences * prompt.maxTokens * (prompt.logprobs + 1);
    if (prompt.promptLogprobs !== undefined) entries += sequences * prompt.promptTokenCount * (prompt.promptLogprobs + 1);
  }
  if (entries > bounds.maxLogprobEntries) {
    throw invalidRequest(
      `This request could report up to ${entries} logprob entries (sequences × (max_tokens × (logprobs + 1) + prompt tokens × (prompt logprobs + 1))), more than the ${bounds.maxLogprobEntries} one request may (maxLogprobEntries). Ask for fewer tokens, sequences or logprobs.`,
      param,
    );
  }
}
