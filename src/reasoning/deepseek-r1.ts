import { afterStartTag, promptClosesThinking, splitAtEndTag } from './think-tags.js';
import type { ReasoningParser, ReasoningParserFactory } from './types.js';

/**
 * vLLM's `deepseek_r1`: reasoning up to `</think>`, content after it. The model may or may
 * not write `<think>` (DeepSeek R1's later template puts it in the prompt), so an output
 * without an end tag is all reasoning: the thought is unfinished, or was cut by max_tokens.
 * llama.cpp's --reasoning-format deepseek reads these outputs the same way (it returns the
 * reasoning as `reasoning_content`).
 */
export const deepseekR1Parser: ReasoningParserFactory = {
  name: 'deepseek_r1',
  create(): ReasoningParser {
    return {
      read(text, final) {
        const body = afterStartTag(text, final);
        if (body === null) return { reasoning: '', content: '' };
        const { reasoning, content } = splitAtEndTag(body, final, 'reasoning');
        return { reasoning, content };
      },
      promptEndsReasoning: (promptText) => promptClosesThinking(promptText),
    };
  },
};
