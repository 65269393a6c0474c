import type { ReasoningParser } from './types.js';

/** What one step adds to a streamed message's two parts. */
export interface ReasoningDelta {
  reasoning?: string;
  content?: string;
}

/**
 * Turns one choice's growing output into reasoning and content deltas. Every step re-reads
 * the whole output (the parsers are stateless); what was sent is remembered, so a delta
 * holds only what is new. When the prompt already closed the reasoning, everything is content.
 */
export class ReasoningStream {
  private text = '';
  private sentReasoning = 0;
  private sentContent = 0;

  constructor(
    private readonly parser: ReasoningParser,
    private readonly promptEndsReasoning: boolean,
  ) {}

  /** Adds the step's text; with `final` (the choice's last step) releases anything held back. */
  push(text: string, final = false): ReasoningDelta {
    this.text += text;
    if (this.promptEndsReasoning) return text === '' ? {} : { content: text };
    const reading = this.parser.read(this.text, final);
    const delta: ReasoningDelta = {};
    if (reading.reasoning.length > this.sentReasoning) {
      delta.reasoning = reading.reasoning.slice(this.sentReasoning);
      this.sentReasoning = reading.reasoning.length;
    }
    if (reading.content.length > this.sentContent) {
      delta.content = reading.content.slice(this.sentContent);
      this.sentContent = reading.content.length;
    }
    return delta;
  }
}

/**
 * A whole output's two parts as vLLM's non-streaming response has them: null for a part
 * that is empty (no reasoning; nothing after the thought).
 */
export function readReasoning(parser: ReasoningParser, promptEndsReasoning: boolean, text: string): { reasoning: string | null; content: string | null } {
  if (promptEndsReasoning) return { reasoning: null, content: text };
  const { reasoning, content } = parser.read(text, true);
  return { reasoning: reasoning === '' ? null : reasoning, content: content === '' ? null : content };
}
