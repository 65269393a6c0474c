/**
 * One request's outcome as the page shows it, built from the response whichever API
 * produced it: the text of each sequence (side by side when n > 1), finish reasons,
 * token counts, timings and the error body if the server refused.
 */
import type { ApiId } from './apis.js';

export interface ChoiceView {
  index: number;
  text: string;
  /** /generate without streaming returns the prompt followed by the output: this much of `text` is the prompt. */
  promptLength: number;
  finishReason: string | null;
  stopReason: string | number | null;
  /** Stream events that carried this sequence: one per generated token on the OpenAI APIs. */
  events: number;
}

export interface ApiErrorView {
  status: number | null;
  message: string;
  type: string | null;
  param: string | null;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
}

export class RunState {
  readonly choices: ChoiceView[] = [];
  status: number | null = null;
  usage: Usage | null = null;
  error: ApiErrorView | null = null;
  /** Everything received, as received (SSE text or the JSON body). */
  raw = '';
  firstTextAt: number | null = null;
  endedAt: number | null = null;
  /** The user pressed Stop. */
  stopped = false;

  constructor(
    readonly api: ApiId,
    readonly stream: boolean,
    /** Reset when the request actually leaves (after the in-page engine has loaded). */
    public startedAt: number,
    /** /generate's prompt, to recognise it at the start of a non-streamed answer. */
    private readonly prompt = '',
    /** /generate with MindIE's fullTextEnabled: each event carries the whole text so far. */
    private readonly fullText = false,
  ) {}

  private choice(index: number): ChoiceView {
    let choice = this.choices.find((c) => c.index === index);
    if (!choice) {
      choice = { index, text: '', promptLength: 0, finishReason: null, stopReason: null, events: 0 };
      this.choices.push(choice);
      this.choices.sort((a, b) => a.index - b.index);
    }
    return choice;
  }

  private addText(choice: ChoiceView, text: string, now: number): void {
    if (text !== '' && this.firstTextAt === null) this.firstTextAt = now;
    choice.text += text;
  }

  /** An error body: {"object":"error",...} (HTTP error) or {"error":{...}} (in a stream). */
  setError(body: unknown, status: number | null): void {
    const inner = isObject(body) && isObject(body.error) ? body.error : body;
    if (isObject(inner) && typeof inner.message === 'string') {
      this.error = {
        status: typeof inner.code === 'number' ? inner.code : status,
        message: inner.message,
        type: typeof inner.type === 'string' ? inner.type : null,
        param: typeof inner.param === 'string' ? inner.param : null,
      };
    } else {
      this.error = { status, message: typeof body === 'string' && body !== '' ? body : `HTTP ${status ?? 'error'}`, type: null, param: null };
    }
  }

  /** One SSE data payload. Returns false when it was not understood (kept in the raw view only). */
  applyEvent(data: string, now: number): boolean {
    if (data === '[DONE]') return true;
    let body: unknown;
    try {
      body = JSON.parse(data);
    } catch {
      return false;
    }
    if (!isObject(body)) return false;
    if ('error' in body) {
      this.setError(body, this.status);
      return true;
    }
    if (this.api === 'generate') return this.applyGenerate(body, now, true);
    if (isObject(body.usage)) this.usage = body.usage as unknown as Usage;
    if (!Array.isArray(body.choices)) return false;
    for (const raw of body.choices) {
      if (!isObject(raw) || typeof raw.index !== 'number') continue;
      const choice = this.choice(raw.index);
      if (this.api === 'chat') {
        const delta = isObject(raw.delta) ? raw.delta : {};
        // vLLM's first chat chunk only announces the role: it carries no token.
        const roleOnly = 'role' in delta && (delta.content === '' || delta.content === undefined);
        if (!roleOnly) choice.events += 1;
        if (typeof delta.content === 'string') this.addText(choice, delta.content, now);
      } else {
        choice.events += 1;
        if (typeof raw.text === 'string') this.addText(choice, raw.text, now);
      }
      this.finish(choice, raw);
    }
    return true;
  }

  /** A complete (non-streamed) JSON body. */
  applyBody(body: unknown, now: number): boolean {
    if (!isObject(body)) return false;
    if (this.api === 'generate') return this.applyGenerate(body, now, false);
    if (isObject(body.usage)) this.usage = body.usage as unknown as Usage;
    if (!Array.isArray(body.choices)) return false;
    for (const raw of body.choices) {
      if (!isObject(raw) || typeof raw.index !== 'number') continue;
      const choice = this.choice(raw.index);
      const text = this.api === 'chat' ? (isObject(raw.message) ? raw.message.content : '') : raw.text;
      if (typeof text === 'string') this.addText(choice, text, now);
      this.finish(choice, raw);
    }
    return true;
  }

  private applyGenerate(body: Record<string, unknown>, now: number, streamed: boolean): boolean {
    if (!Array.isArray(body.text)) return false;
    body.text.forEach((text, index) => {
      if (typeof text !== 'string') return;
      const choice = this.choice(index);
      if (streamed) {
        choice.events += 1;
        if (this.fullText) {
          if (text !== '' && this.firstTextAt === null) this.firstTextAt = now;
          choice.text = text;
        } else {
          this.addText(choice, text, now);
        }
      } else {
        if (this.prompt !== '' && text.startsWith(this.prompt)) choice.promptLength = this.prompt.length;
        this.addText(choice, text, now);
      }
    });
    return true;
  }

  private finish(choice: ChoiceView, raw: Record<string, unknown>): void {
    if (typeof raw.finish_reason === 'string') choice.finishReason = raw.finish_reason;
    if (typeof raw.stop_reason === 'string' || typeof raw.stop_reason === 'number') choice.stopReason = raw.stop_reason;
  }

  /** Generated tokens: exact from the usage block, else counted from stream events (approximate on /generate). */
  tokens(): { count: number; exact: boolean } | null {
    if (this.usage) return { count: this.usage.completion_tokens, exact: true };
    if (!this.stream || this.choices.length === 0) return null;
    const count = this.choices.reduce((sum, c) => sum + c.events, 0);
    // /generate sends an event only when text was released, so several tokens may share one.
    return { count, exact: this.api !== 'generate' };
  }

  metrics(now: number): { ttftMs: number | null; elapsedMs: number; tokens: { count: number; exact: boolean } | null; tokensPerSecond: number | null } {
    const end = this.endedAt ?? now;
    const elapsedMs = end - this.startedAt;
    const tokens = this.tokens();
    const tokensPerSecond = tokens && elapsedMs > 0 && tokens.count > 0 ? (tokens.count * 1000) / elapsedMs : null;
    return {
      ttftMs: this.stream && this.firstTextAt !== null ? this.firstTextAt - this.startedAt : null,
      elapsedMs,
      tokens,
      tokensPerSecond,
    };
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
