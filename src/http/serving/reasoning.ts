import type { ChatCompletionRequest } from '../../protocol/openai-chat.js';
import { REASONING_PARSERS, type ReasoningParserName } from '../../reasoning/index.js';
import type { ReasoningParser } from '../../reasoning/types.js';

/** How one chat request's outputs are split into reasoning and content. */
export interface ChatReasoning {
  parser: ReasoningParser;
  /** The template closed the thought in the prompt (Qwen3's enable_thinking false): all output is content. */
  promptEndsReasoning: boolean;
  /** The request's include_reasoning: false drops the reasoning from the response. */
  include: boolean;
}

/**
 * The server's reasoning parser for a request, as vLLM's chat serving makes one per request
 * (with its chat_template_kwargs). Null without a parser, and for output a grammar
 * constrains from its first token (structured output, a named or "required" tool choice):
 * such output has no room for a thought, so it is all content.
 */
export function chatReasoning(
  name: ReasoningParserName | undefined,
  request: Pick<ChatCompletionRequest, 'chat_template_kwargs' | 'include_reasoning'>,
  promptText: string,
  constrained: boolean,
): ChatReasoning | null {
  if (name === undefined || constrained) return null;
  const parser = REASONING_PARSERS[name].create({ chatTemplateKwargs: request.chat_template_kwargs });
  return { parser, promptEndsReasoning: parser.promptEndsReasoning(promptText), include: request.include_reasoning };
}
