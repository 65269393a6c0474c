/**
 * Llama 3.1 / 3.2 JSON tool calls: the output is one or more JSON objects
 * {"name": ..., "parameters": {...}} ("arguments" is read too), separated by ";",
 * optionally after <|python_tag|>. An output that starts otherwise is plain content.
 */
import { callFromObject } from '../json-calls.js';
import { InvalidJsonError, scanJson } from '../partial-json.js';
import type { ToolCallParser, ToolCallReading, ToolCallSnapshot } from '../types.js';

const PYTHON_TAG = '<|python_tag|>';

function read(text: string, final: boolean): ToolCallReading {
  const lead = text.trimStart();
  let at: number;
  if (lead.startsWith(PYTHON_TAG)) at = text.indexOf(PYTHON_TAG) + PYTHON_TAG.length;
  else if (lead.startsWith('{')) at = text.length - lead.length;
  else if (!final && (lead === '' || PYTHON_TAG.startsWith(lead))) return { content: '', calls: [] };
  else return { content: text, calls: [] };

  const calls: ToolCallSnapshot[] = [];
  try {
    for (;;) {
      const node = scanJson(text, at);
      if (node === null) break;
      if (node.kind !== 'object') throw new InvalidJsonError('a tool call must be a JSON object');
      const call = callFromObject(text, node, ['parameters', 'arguments']);
      if (call === null) break;
      calls.push(call);
      if (!node.complete) break;
      const rest = text.slice(node.end).trimStart();
      if (!rest.startsWith(';')) {
        if (rest !== '') throw new InvalidJsonError('expected ";" between tool calls');
        break;
      }
      at = text.length - rest.length + 1;
    }
  } catch (error) {
    if (!(error instanceof InvalidJsonError)) throw error;
    if (final && calls.length === 0) return { content: text, calls };
  }
  return { content: '', calls };
}

export const llama3JsonParser: ToolCallParser = { name: 'llama3_json', read, keepsSpecialTokens: true };
