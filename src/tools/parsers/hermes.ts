/**
 * Hermes (NousResearch Hermes 2 Pro / 3, Qwen 2.5 and 3): each call is a JSON object
 * {"name": ..., "arguments": {...}} between <tool_call> and </tool_call>. The content is
 * the text before the first call.
 */
import { callFromObject } from '../json-calls.js';
import { InvalidJsonError, scanJson } from '../partial-json.js';
import { partialTagLength, type ToolCallParser, type ToolCallReading, type ToolCallSnapshot } from '../types.js';

const OPEN = '<tool_call>';

function read(text: string, final: boolean): ToolCallReading {
  const first = text.indexOf(OPEN);
  if (first === -1) return { content: final ? text : text.slice(0, text.length - partialTagLength(text, OPEN)), calls: [] };
  const calls: ToolCallSnapshot[] = [];
  let open = first;
  try {
    while (open !== -1) {
      const node = scanJson(text, open + OPEN.length);
      if (node === null) break;
      if (node.kind !== 'object') throw new InvalidJsonError('a tool call must be a JSON object');
      const call = callFromObject(text, node, ['arguments', 'parameters']);
      if (call === null) break;
      calls.push(call);
      if (!node.complete) break;
      open = text.indexOf(OPEN, node.end);
    }
  } catch (error) {
    if (!(error instanceof InvalidJsonError)) throw error;
    // Not a call after all: with nothing read, the whole output is the answer (vLLM).
    if (final && calls.length === 0) return { content: text, calls };
  }
  return { content: text.slice(0, first), calls };
}

export const hermesParser: ToolCallParser = { name: 'hermes', read, keepsSpecialTokens: true };
