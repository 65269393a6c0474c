/**
 * GLM-4.5 / 4.6 (vLLM's `glm45`): each call is
 *   <tool_call>NAME\n<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>\n...</tool_call>
 * Values are text; as vLLM's parser does, a value whose parameter the tool's schema types
 * as "string" stays text, any other is read as JSON (or a Python literal True / False /
 * None), else kept as text. The arguments are that object in Python's JSON, streamed
 * argument by argument. The content is the text before the first call.
 */
import type { FunctionTool } from '../constrained.js';
import { pythonJson } from '../python-json.js';
import { partialTagLength, type ToolCallParser, type ToolCallReading, type ToolCallSnapshot } from '../types.js';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';
const KEY = '<arg_key>';
const KEY_END = '</arg_key>';
const VALUE = '<arg_value>';
const VALUE_END = '</arg_value>';

const PYTHON_LITERALS: Record<string, unknown> = { True: true, False: false, None: null };

type Schemas = ReadonlyMap<string, Record<string, unknown>>;

function isStringParameter(schemas: Schemas, name: string, key: string): boolean {
  const properties = schemas.get(name)?.properties;
  if (typeof properties !== 'object' || properties === null) return false;
  const schema = (properties as Record<string, unknown>)[key];
  return typeof schema === 'object' && schema !== null && (schema as { type?: unknown }).type === 'string';
}

function deserialize(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw in PYTHON_LITERALS ? PYTHON_LITERALS[raw] : raw;
  }
}

/** One call from its <tool_call>: as far as it goes, and where it ended (-1: not complete). */
function readCall(text: string, open: number, schemas: Schemas): { call: ToolCallSnapshot | null; end: number } {
  const newline = text.indexOf('\n', open + OPEN.length);
  const close = text.indexOf(CLOSE, open + OPEN.length);
  const nameEnd = newline !== -1 && (close === -1 || newline < close) ? newline : close;
  if (nameEnd === -1) return { call: null, end: -1 };
  const name = text.slice(open + OPEN.length, nameEnd).trim();
  const parts: string[] = [];
  let cursor = nameEnd;
  for (;;) {
    const key = text.indexOf(KEY, cursor);
    const end = text.indexOf(CLOSE, cursor);
    if (end !== -1 && (key === -1 || end < key)) return { call: { name, arguments: `{${parts.join(', ')}}` }, end: end + CLOSE.length };
    if (key === -1) break;
    const keyEnd = text.indexOf(KEY_END, key);
    if (keyEnd === -1) break;
    const value = text.indexOf(VALUE, keyEnd);
    if (value === -1) break;
    const valueEnd = text.indexOf(VALUE_END, value);
    if (valueEnd === -1) break;
    const argument = text.slice(key + KEY.length, keyEnd).trim();
    const raw = text.slice(value + VALUE.length, valueEnd).trim();
    const typed = isStringParameter(schemas, name, argument) ? raw : deserialize(raw);
    parts.push(`${JSON.stringify(argument)}: ${pythonJson(typed)}`);
    cursor = valueEnd + VALUE_END.length;
  }
  return { call: { name, arguments: parts.length > 0 ? `{${parts.join(', ')}` : '' }, end: -1 };
}

function reader(schemas: Schemas) {
  return (text: string, final: boolean): ToolCallReading => {
    const first = text.indexOf(OPEN);
    if (first === -1) return { content: final ? text : text.slice(0, text.length - partialTagLength(text, OPEN)), calls: [] };
    const calls: ToolCallSnapshot[] = [];
    let open = first;
    while (open !== -1) {
      const { call, end } = readCall(text, open, schemas);
      if (call === null) break;
      calls.push(call);
      if (end === -1) break;
      open = text.indexOf(OPEN, end);
    }
    return { content: text.slice(0, first), calls };
  };
}

function parserFor(tools: readonly FunctionTool[]): ToolCallParser {
  const schemas: Schemas = new Map(tools.map((tool) => [tool.name, tool.parameters ?? {}]));
  return { name: 'glm45', read: reader(schemas), keepsSpecialTokens: true, withTools: parserFor };
}

export const glm45Parser: ToolCallParser = parserFor([]);
