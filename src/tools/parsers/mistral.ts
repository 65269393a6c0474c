/**
 * Mistral: [TOOL_CALLS] followed by a JSON list [{"name": ..., "arguments": {...}}, ...]
 * (tokenizers before v11), or by name[ARGS]{...} per call (v11 and later, each call
 * after its own [TOOL_CALLS]). The content is the text before the first [TOOL_CALLS].
 * Call ids are 9 alphanumerics, the only form Mistral's templates accept back.
 */
import { mistralToolCallId } from '../call-ids.js';
import { callFromObject } from '../json-calls.js';
import { InvalidJsonError, scanJson } from '../partial-json.js';
import { partialTagLength, type ToolCallParser, type ToolCallReading, type ToolCallSnapshot } from '../types.js';

const TOOL_CALLS = '[TOOL_CALLS]';
const ARGS = '[ARGS]';

function readList(text: string, at: number, calls: ToolCallSnapshot[]): void {
  const list = scanJson(text, at);
  if (list === null) return;
  if (list.kind !== 'array') throw new InvalidJsonError('expected a list of tool calls');
  for (const item of list.items) {
    if (item.kind !== 'object') throw new InvalidJsonError('a tool call must be a JSON object');
    const call = callFromObject(text, item, ['arguments', 'parameters']);
    if (call === null) return;
    calls.push(call);
  }
}

function readNamed(text: string, at: number, calls: ToolCallSnapshot[]): void {
  for (;;) {
    const args = text.indexOf(ARGS, at);
    if (args === -1) return; // the name is not complete yet
    const name = text.slice(at, args).trim();
    if (!/^[A-Za-z_][\w.-]*$/.test(name)) throw new InvalidJsonError(`not a function name: ${JSON.stringify(name)}`);
    const value = scanJson(text, args + ARGS.length);
    if (value === null) {
      calls.push({ name, arguments: '' });
      return;
    }
    calls.push({ name, arguments: text.slice(value.start, value.end) });
    if (!value.complete) return;
    const next = text.indexOf(TOOL_CALLS, value.end);
    if (next === -1) return;
    at = next + TOOL_CALLS.length;
  }
}

function read(text: string, final: boolean): ToolCallReading {
  const first = text.indexOf(TOOL_CALLS);
  if (first === -1) return { content: final ? text : text.slice(0, text.length - partialTagLength(text, TOOL_CALLS)), calls: [] };
  const calls: ToolCallSnapshot[] = [];
  const at = first + TOOL_CALLS.length;
  const rest = text.slice(at).trimStart();
  try {
    if (rest.startsWith('[')) readList(text, at, calls);
    else readNamed(text, at, calls);
  } catch (error) {
    if (!(error instanceof InvalidJsonError)) throw error;
    if (final && calls.length === 0) return { content: text, calls };
  }
  return { content: text.slice(0, first), calls };
}

export const mistralParser: ToolCallParser = { name: 'mistral', read, keepsSpecialTokens: true, newCallId: mistralToolCallId };
