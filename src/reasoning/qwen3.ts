import { partialTagLength } from './types.js';
import { THINK_END, afterStartTag, promptClosesThinking, splitAtEndTag } from './think-tags.js';
import type { ReasoningParser, ReasoningParserFactory, ReasoningRequestOptions } from './types.js';

/** Qwen3.5 may open a tool call inside its thought without closing it first. */
const TOOL_CALL_TAG = '<tool_call>';

/**
 * vLLM's `qwen3` (its current release): `<think>` … `</think>` like DeepSeek R1, with
 * Qwen3's switch: with `chat_template_kwargs: {"enable_thinking": false}` an output without
 * `</think>` is all content (the template wrote an empty thought into the prompt, which
 * `promptEndsReasoning` sees too). With thinking on, an output without `</think>` is
 * reasoning up to a `<tool_call>` (an implicit end of the thought: the call and what
 * follows are content, so the tool parser sees them), and all reasoning without one.
 */
export const qwen3Parser: ReasoningParserFactory = {
  name: 'qwen3',
  create(options: ReasoningRequestOptions): ReasoningParser {
    const thinkingEnabled = options.chatTemplateKwargs?.enable_thinking !== false;
    return {
      read(text, final) {
        const body = afterStartTag(text, final);
        if (body === null) return { reasoning: '', content: '' };
        const split = splitAtEndTag(body, final, thinkingEnabled ? 'reasoning' : 'content');
        if (split.closed || !thinkingEnabled) return { reasoning: split.reasoning, content: split.content };
        const call = body.indexOf(TOOL_CALL_TAG);
        if (call >= 0) return { reasoning: body.slice(0, call), content: body.slice(call) };
        // Hold back what may still become either tag.
        const held = final ? 0 : Math.max(partialTagLength(body, TOOL_CALL_TAG), partialTagLength(body, THINK_END));
        return { reasoning: body.slice(0, body.length - held), content: '' };
      },
      promptEndsReasoning: (promptText) => promptClosesThinking(promptText),
    };
  },
};
