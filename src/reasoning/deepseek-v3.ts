import { deepseekR1Parser } from './deepseek-r1.js';
import type { ReasoningParser, ReasoningParserFactory } from './types.js';

/**
 * vLLM's `deepseek_v3` (DeepSeek V3.1 and later, whose template thinks only when asked):
 * with `chat_template_kwargs: {"thinking": true}` it reads as `deepseek_r1`; otherwise the
 * whole output is content.
 */
export const deepseekV3Parser: ReasoningParserFactory = {
  name: 'deepseek_v3',
  create(options): ReasoningParser {
    if (options.chatTemplateKwargs?.thinking === true) return deepseekR1Parser.create(options);
    return { read: (text) => ({ reasoning: '', content: text }), promptEndsReasoning: () => true };
  },
};
