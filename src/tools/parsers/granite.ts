/**
 * IBM Granite 3.x (vLLM's `granite`): the output opens with <|tool_call|> (3.0) or
 * <tool_call> (3.1 and later), or directly with the list, followed by a JSON list of
 * {"name": ..., "arguments": {...}}. An output that does not open that way is all content;
 * one that does has no content.
 */
import { callFromObject } from '../json-calls.js';
import { InvalidJsonError, scanJson } from '../partial-json.js';
import type { ToolCallParser, ToolCallReading, ToolCallSnapshot } from '../types.js';

const TAGS = ['<|tool_call|>', '<tool_call>'];

function read(text: string, final: boolean): ToolCallReading {
  let rest = text.trimStart();
  // Still possibly the start of a tag: nothing to say yet.
  if (!final && TAGS.some((tag) => tag.length > rest.length && tag.startsWith(rest))) return { content: '', calls: [] };
  const tag = TAGS.find((candidate) => rest.startsWith(candidate));
  if (tag !== undefined) rest = rest.slice(tag.length).trimStart();
  if (rest === '') return { content: final && tag === undefined ? text : '', calls: [] };
  if (rest[0] !== '[') return { content: text, calls: [] };
  const calls: ToolCallSnapshot[] = [];
  try {
    const list = scanJson(text, text.length - rest.length);
    if (list !== null) {
      if (list.kind !== 'array') throw new InvalidJsonError('expected a list of tool calls');
      for (const item of list.items) {
        if (item.kind !== 'object') throw new InvalidJsonError('a tool call must be a JSON object');
        const call = callFromObject(text, item, ['arguments']);
        if (call === null) break;
        calls.push(call);
      }
    }
  } catch (error) {
    if (!(error instanceof InvalidJsonError)) throw error;
    if (final && calls.length === 0) return { content: text, calls };
  }
  return { content: '', calls };
}

export const graniteParser: ToolCallParser = { name: 'granite', read, keepsSpecialTokens: true };
