/** Tool calls as the chat endpoints return them, and what parsers read out of model text. */

/** OpenAI's message.tool_calls entry. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** OpenAI's delta.tool_calls entry: the first for a call has id, type and name; later ones argument fragments. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments?: string };
}

/** One call as far as the text so far shows it. */
export interface ToolCallSnapshot {
  /** Known only once complete: a call is announced by its whole name. */
  name: string;
  /** The call's id when the format writes one (Kimi K2's "functions.name:0"); else the server makes one. */
  id?: string;
  /**
   * The arguments' JSON text so far: always a prefix of the final arguments (a parser
   * that cannot guarantee that for a partial call leaves it empty until the call is complete).
   */
  arguments: string;
}

/**
 * What a text (the whole output so far) says: the content for the user and the calls.
 * For a partial text, `content` holds only what cannot turn out to be the start of a
 * call (a partial tag is held back) and must be a prefix of any later snapshot's.
 */
export interface ToolCallReading {
  content: string;
  calls: ToolCallSnapshot[];
}

/**
 * Reads tool calls out of a model's output, in one model family's format (vLLM's
 * --tool-call-parser). `read` is called with the output so far (`final` false) as it
 * streams, and with the whole output (`final` true) at the end.
 */
export interface ToolCallParser {
  readonly name: string;
  read(text: string, final: boolean): ToolCallReading;
  /** A new call id in the format the model family uses; "chatcmpl-tool-…" when absent. */
  newCallId?(): string;
  /**
   * Whether the parser needs special tokens in the text (its tags are special tokens in
   * the models that use it), as vLLM's parsers turn skip_special_tokens off.
   */
  readonly keepsSpecialTokens: boolean;
  /**
   * The parser for a request's tools, for formats whose values are typed by the tools'
   * schemas (qwen3_coder's XML parameters are text); absent: the tools do not matter.
   */
  withTools?(tools: ReadonlyArray<{ name: string; parameters?: Record<string, unknown> }>): ToolCallParser;
}

/** What the end of text held back: the longest suffix of `text` that is a proper prefix of `tag`. */
export function partialTagLength(text: string, tag: string): number {
  for (let length = Math.min(tag.length - 1, text.length); length > 0; length--) {
    if (tag.startsWith(text.slice(text.length - length))) return length;
  }
  return 0;
}
