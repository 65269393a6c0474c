/**
 * Chat templates off the event loop. A rendering is synchronous (@huggingface/jinja), and its
 * cost grows with the conversation: real templates take 13–170 evaluation steps a message
 * (one 385), at 0.25–1.4 µs a step on this machine quiet, so a 1000-message conversation
 * holds the loop 7–150 ms quiet and several times that under load (measured over 50 models'
 * templates: NOTES). Where the home has threads (Node: node-template-thread.ts) a rendering
 * that can be long runs on one, under the same step budget and a deadline; a short one still
 * renders here, its steps capped at INLINE_TEMPLATE_STEPS (a few ms): past them it moves to
 * the thread. Elsewhere (workerd, a browser tab) it renders here within its step budget.
 *
 * The thread renders with the same ChatTemplate class and library, so its text is the text
 * rendering here would give, byte for byte.
 */
import { ChatTemplate, ChatTemplateError, DEFAULT_TEMPLATE_BUDGET, type ChatTemplateMessage, type ChatTemplateOptions } from './chat-template.js';

/** A template not parsed yet: its source and the special-token strings it renders with. */
export interface TemplateSource {
  source: string;
  bosToken: string;
  eosToken: string;
  /** unk_token, pad_token, ... (ChatTemplate.otherTokens). */
  otherTokens?: Readonly<Record<string, string>>;
}

/** One rendering for the thread: the template by its source and tokens (it compiles and keeps it), and render()'s arguments. */
export interface TemplateRenderJob extends TemplateSource {
  messages: readonly ChatTemplateMessage[];
  options: ChatTemplateOptions;
}

/** The thread could not parse a template it was sent as source (a request's own, too long to parse on the loop). */
export class TemplateSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateSyntaxError';
  }
}

export interface TemplateThread {
  /**
   * ChatTemplate.render's text, or its ChatTemplateError; past `timeoutMs` the thread is
   * stopped and a ChatTemplateError with budgetBound 'time' is thrown; the signal's reason once it aborts.
   * The deadline counts from the call (queued time included); `client` takes its turn among others'
   * (a ThreadQueueFullError when the queue, or the client's share of it, is full).
   */
  render(job: TemplateRenderJob, control: { timeoutMs: number; signal?: AbortSignal; client?: string }): Promise<string>;
  /** Stops the threads; renderings running or queued fail with `reason()` (default: an error saying it was closed). */
  close(reason?: () => unknown): Promise<void>;
}

/** How a request's rendering may leave the loop: the home's thread, the deadline there, the request's signal. */
export interface TemplateOffLoop {
  thread: TemplateThread;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Who asked: renderings are taken from clients in turn. */
  client?: string;
}

/**
 * Steps a rendering may take on the event loop before it moves to the thread: 1–6 ms quiet
 * at the measured 0.25–1.4 µs a step. Ordinary conversations (a few messages: 300–2000 steps
 * with any template measured) never leave the loop, and pay no thread round trip.
 */
export const INLINE_TEMPLATE_STEPS = 4000;
/** Conversations longer than this go to the thread at once: even the cheapest templates (13 a message) would pass the inline steps by a few hundred. */
export const INLINE_TEMPLATE_MESSAGES = 32;
/**
 * Characters of text (messages, tools, documents, template variables) past which the
 * rendering goes to the thread at once: a step on a long string (trim, replace, tojson of a
 * large tool list) costs in proportion to its length, which steps do not count.
 */
export const INLINE_TEMPLATE_CHARS = 64 * 1024;


/**
 * Renders `messages` with `template`: here when it is short, on the thread otherwise (see the
 * module comment); a template given as source (not parsed yet) renders on the thread, or is
 * parsed here without one. Without `offLoop` it renders here under options.budget, as before.
 */
export async function renderChatTemplate(
  template: ChatTemplate | TemplateSource,
  messages: readonly ChatTemplateMessage[],
  options: ChatTemplateOptions,
  offLoop?: TemplateOffLoop,
): Promise<string> {
  if (offLoop === undefined) {
    const compiled = template instanceof ChatTemplate ? template : parseHere(template);
    return compiled.render(messages, options);
  }
  const budget = options.budget ?? DEFAULT_TEMPLATE_BUDGET;
  if (template instanceof ChatTemplate && messages.length <= INLINE_TEMPLATE_MESSAGES && !textLongerThan([messages, options.kwargs], INLINE_TEMPLATE_CHARS)) {
    const inlineSteps = Math.min(budget.maxSteps, INLINE_TEMPLATE_STEPS);
    try {
      return template.render(messages, { ...options, budget: { ...budget, maxSteps: inlineSteps } });
    } catch (error) {
      // Past the loop's steps but within the request's: the rest belongs on the thread.
      const movesToThread = error instanceof ChatTemplateError && error.budgetBound === 'steps' && inlineSteps < budget.maxSteps;
      if (!movesToThread) throw error;
    }
  }
  const job: TemplateRenderJob = { source: template.source, bosToken: template.bosToken, eosToken: template.eosToken, otherTokens: template.otherTokens, messages, options: { ...options, budget } };
  return offLoop.thread.render(job, { timeoutMs: offLoop.timeoutMs, signal: offLoop.signal, client: offLoop.client });
}

function parseHere({ source, bosToken, eosToken, otherTokens }: TemplateSource): ChatTemplate {
  try {
    return new ChatTemplate(source, bosToken, eosToken, otherTokens);
  } catch (error) {
    throw new TemplateSyntaxError(error instanceof Error ? error.message : String(error));
  }
}

/** Whether the strings (and keys) inside `value` add up to more than `limit` characters; stops counting past it. */
function textLongerThan(value: unknown, limit: number): boolean {
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') total += item.length;
    else if (Array.isArray(item)) {
      total += item.length;
      for (const inner of item) stack.push(inner);
    } else if (item !== null && typeof item === 'object') {
      for (const [key, inner] of Object.entries(item)) {
        total += key.length + 1;
        stack.push(inner);
      }
    }
    if (total > limit) return true;
  }
  return false;
}
