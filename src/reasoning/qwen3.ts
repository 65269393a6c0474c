import { partialTagLength } from './types.js';
import { THINK_END, afterStartTag, promptClosesThinking, splitAtEndTag } from './think-tags.js';
import type { ReasoningParser, ReasoningParserFactory, ReasoningRequestOptions } from './types.js';

/** Qwen3.5 may open a tool call inside its thought without closing it first. */
const TOOL_CALL_TAG = '<tool_call>';

/**
 * vLLM's `qwen3` (its current release): `<think>` … `</think>` like DeepSeek R1, with
 * Qwen3's switch: with `chat_template_kwargs: {"enable_thinking": false}` an output that
 * does not open a thought is all content (the template wrote an empty thought into the
 * prompt, which `promptEndsReasoning` sees too; vLLM's non-streaming path would still split
 * at a stray `</think>`, its streaming path does not: this follows the streaming one, so
 * both agree). With thinking on, an output without `</think>` is reasoning up to a
 * `<tool_call>` (an implicit end of the thought: the call and what follows are content, so
 * the tool parser sees them; as vLLM's non-streaming path, a `</think>` anywhere after it
 * wins, so a streamed call in an open thought is held back until the output ends), and all
 * reasoning without one.
 */
export const qwen3Parser: ReasoningParserFactory = {
  name: 'qwen3',
  create(options: ReasoningRequestOptions): ReasoningParser {
    const thinkingEnabled = options.chatTemplateKwargs?.enable_thinking !== false;
    return {
      read(text, final) {
        const body = afterStartTag(text, final);
        if (body === null) return { reasoning: '', content: '' };
        // Thinking off and no thought opened: all content, a later </think> included (so
        // what was streamed as content stays content).
        if (!thinkingEnabled && body === text) return { reasoning: '', content: text };
        const split = splitAtEndTag(body, final, 'reasoning');
        if (split.closed) return { reasoning: split.reasoning, content: split.content };
        // A call in an open thought: the thought ends there unless a </think> still comes
        // (then the call was only thought about). Until the output is over, what follows
        // the tag is held back, so what was streamed never changes sides.
        const call = body.indexOf(TOOL_CALL_TAG);
        if (call >= 0) return { reasoning: body.slice(0, call), content: final ? body.slice(call) : '' };
        // Hold back what may still become either tag.
        const held = final ? 0 : Math.max(partialTagLength(body, TOOL_CALL_TAG), partialTagLength(body, THINK_END));
        return { reasoning: body.slice(0, body.length - held), content: '' };
      },
      promptEndsReasoning: (promptText) => promptClosesThinking(promptText),
    };
  },
};
