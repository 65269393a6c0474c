import { partialTagLength, type ReasoningReading } from './types.js';

/** The tags of the `<think>` family (DeepSeek R1, Qwen3, and most open reasoning models). */
export const THINK_START = '<think>';
export const THINK_END = '</think>';

/**
 * The output without a `<think>` it opens with (leading whitespace before it included), or
 * null while the output could still become one (`<th…` with more to come). Models whose
 * template leaves the tag to them write it as their first token; a template that puts it
 * in the prompt (DeepSeek R1's current one, Qwen3.5) leaves none in the output.
 */
export function afterStartTag(text: string, final: boolean, startTag = THINK_START): string | null {
  const trimmed = text.trimStart();
  if (trimmed.startsWith(startTag)) return trimmed.slice(startTag.length);
  if (!final && trimmed.length < startTag.length && startTag.startsWith(trimmed)) return null;
  return text;
}

/**
 * Splits `body` (the output after any start tag) at the first end tag: the reasoning before
 * it, the content after. Without an end tag, `whenOpen` says what the text is: still
 * reasoning (the thought is not over, or the output was cut) or content; a partial end tag
 * at the end of an unfinished output is held back from both.
 */
export function splitAtEndTag(body: string, final: boolean, whenOpen: 'reasoning' | 'content', endTag = THINK_END): ReasoningReading & { closed: boolean } {
  const end = body.indexOf(endTag);
  if (end >= 0) return { reasoning: body.slice(0, end), content: body.slice(end + endTag.length), closed: true };
  const held = final ? 0 : partialTagLength(body, endTag);
  const open = body.slice(0, body.length - held);
  return whenOpen === 'reasoning' ? { reasoning: open, content: '', closed: false } : { reasoning: '', content: open, closed: false };
}

/**
 * vLLM's is_reasoning_end on the prompt: scanning back from its end, an end tag before any
 * start tag means the template closed the reasoning itself.
 */
export function promptClosesThinking(promptText: string, startTag = THINK_START, endTag = THINK_END): boolean {
  const lastEnd = promptText.lastIndexOf(endTag);
  return lastEnd >= 0 && lastEnd > promptText.lastIndexOf(startTag);
}
