/**
 * Reasoning models write their chain of thought before the answer, between tags such as
 * `<think>` … `</think>`. A reasoning parser (vLLM's --reasoning-parser) splits a model's
 * output into that reasoning and the content proper; the chat endpoint returns them in
 * separate fields, and tool calls are read from the content only.
 */

/** What an output (the whole output so far) says. */
export interface ReasoningReading {
  /** The reasoning text so far, tags removed. */
  reasoning: string;
  /**
   * The content so far: everything after the reasoning. For a partial output it is a
   * prefix of any later reading's content, as `reasoning` is of any later reasoning
   * (an end tag that may still be forming is held back from both).
   */
  content: string;
}

/** What a parser knows of the request. */
export interface ReasoningRequestOptions {
  /** The request's chat_template_kwargs (Qwen3's enable_thinking, DeepSeek V3.1's thinking). */
  chatTemplateKwargs?: Record<string, unknown>;
}

/** Splits one output; made per request (a parser may depend on its chat_template_kwargs). */
export interface ReasoningParser {
  /**
   * Reads the output so far (`final` false, as it streams) or the whole output (`final`
   * true). Stateless: every call reads the text from its start.
   */
  read(text: string, final: boolean): ReasoningReading;
  /**
   * Whether the prompt already closed the reasoning (vLLM's prompt_is_reasoning_end: the
   * template wrote an empty `<think></think>`, as Qwen3's does for enable_thinking false):
   * then the whole output is content and the parser is not asked.
   */
  promptEndsReasoning(promptText: string): boolean;
}

/** A registered parser: its vLLM name and how to make one for a request. */
export interface ReasoningParserFactory {
  readonly name: string;
  create(options: ReasoningRequestOptions): ReasoningParser;
}

/** The longest suffix of `text` that is a proper prefix of `tag` (a tag that may still be forming). */
export function partialTagLength(text: string, tag: string): number {
  for (let length = Math.min(tag.length - 1, text.length); length > 0; length--) {
    if (tag.startsWith(text.slice(text.length - length))) return length;
  }
  return 0;
}
