/**
 * Qwen3-Coder (vLLM's `qwen3_coder`): XML-style calls,
 *   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>\n</tool_call>
 * Values are raw text, typed by the tool's parameters schema as vLLM's parser types them:
 * "null" is null; string types stay text; integer types become integers and number types
 * numbers; booleans from "true"/"false"; anything else is read as JSON, else kept as text;
 * a parameter the schema does not name stays text. The arguments are that object in
 * Python's JSON (as vLLM's json.dumps writes it), streamed parameter by parameter. The
 * content is the text before the first call.
 */
import type { FunctionTool } from '../constrained.js';
import { pythonJson } from '../python-json.js';
import { partialTagLength, type ToolCallParser, type ToolCallReading, type ToolCallSnapshot } from '../types.js';

const TOOL_CALL = '<tool_call>';
const FUNCTION = '<function=';
const FUNCTION_END = '</function>';
const PARAMETER = '<parameter=';
const PARAMETER_END = '</parameter>';

type Schemas = ReadonlyMap<string, Record<string, unknown>>;

/** The JSON Schema type of a function's parameter, lowercased; undefined when the schema does not name it. */
function parameterType(schemas: Schemas, functionName: string, parameter: string): string | undefined {
  const properties = schemas.get(functionName)?.properties;
  if (typeof properties !== 'object' || properties === null || !(parameter in properties)) return undefined;
  const schema = (properties as Record<string, unknown>)[parameter];
  const type = typeof schema === 'object' && schema !== null ? (schema as { type?: unknown }).type : undefined;
  return typeof type === 'string' ? type.toLowerCase() : 'string';
}

/** A parameter's raw text as vLLM's _convert_param_value types it. */
export function typedParameter(raw: string, type: string | undefined): unknown {
  if (raw.toLowerCase() === 'null') return null;
  if (type === undefined || ['string', 'str', 'text', 'varchar', 'char', 'enum'].includes(type)) return raw;
  if (/^(int|uint|long|short|unsigned)/.test(type)) {
    return /^\s*[+-]?\d+\s*$/.test(raw) ? Number.parseInt(raw, 10) : raw;
  }
  if (type.startsWith('num') || type.startsWith('float')) {
    const number = Number(raw);
    return raw.trim() !== '' && Number.isFinite(number) ? number : raw;
  }
  if (['boolean', 'bool', 'binary'].includes(type)) return raw.trim().toLowerCase() === 'true';
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/** One <function=...> block from `at`: the call as far as it goes, and where it ended (-1: not complete). */
function readFunction(text: string, at: number, schemas: Schemas): { call: ToolCallSnapshot | null; end: number } {
  const nameEnd = text.indexOf('>', at + FUNCTION.length);
  if (nameEnd === -1) return { call: null, end: -1 };
  const name = text.slice(at + FUNCTION.length, nameEnd).trim();
  const parts: string[] = [];
  let cursor = nameEnd + 1;
  for (;;) {
    const parameter = text.indexOf(PARAMETER, cursor);
    const functionEnd = text.indexOf(FUNCTION_END, cursor);
    if (functionEnd !== -1 && (parameter === -1 || functionEnd < parameter)) {
      return { call: { name, arguments: `{${parts.join(', ')}}` }, end: functionEnd + FUNCTION_END.length };
    }
    if (parameter === -1) break;
    const keyEnd = text.indexOf('>', parameter + PARAMETER.length);
    if (keyEnd === -1) break;
    // A value ends at </parameter>, or (vLLM tolerates it) at the next parameter or the function's end.
    const candidates = [text.indexOf(PARAMETER_END, keyEnd), text.indexOf(PARAMETER, keyEnd), text.indexOf(FUNCTION_END, keyEnd)].filter((i) => i >= 0);
    if (candidates.length === 0) break;
    const valueEnd = Math.min(...candidates);
    const key = text.slice(parameter + PARAMETER.length, keyEnd).trim();
    let raw = text.slice(keyEnd + 1, valueEnd);
    if (raw.startsWith('\n')) raw = raw.slice(1);
    if (raw.endsWith('\n')) raw = raw.slice(0, -1);
    parts.push(`${JSON.stringify(key)}: ${pythonJson(typedParameter(raw, parameterType(schemas, name, key)))}`);
    cursor = text.startsWith(PARAMETER_END, valueEnd) ? valueEnd + PARAMETER_END.length : valueEnd;
  }
  // Unfinished: the parameters complete so far, the object still open.
  return { call: { name, arguments: parts.length > 0 ? `{${parts.join(', ')}` : '' }, end: -1 };
}

function reader(schemas: Schemas) {
  return (text: string, final: boolean): ToolCallReading => {
    const tag = text.indexOf(TOOL_CALL);
    const bare = text.indexOf(FUNCTION);
    const first = tag !== -1 && (bare === -1 || tag < bare) ? tag : bare;
    if (first === -1) {
      const held = final ? 0 : Math.max(partialTagLength(text, TOOL_CALL), partialTagLength(text, FUNCTION));
      return { content: text.slice(0, text.length - held), calls: [] };
    }
    const calls: ToolCallSnapshot[] = [];
    let at = text.indexOf(FUNCTION, first);
    while (at !== -1) {
      const { call, end } = readFunction(text, at, schemas);
      if (call === null) break;
      calls.push(call);
      if (end === -1) break;
      at = text.indexOf(FUNCTION, end);
    }
    return { content: text.slice(0, first), calls };
  };
}

function parserFor(tools: readonly FunctionTool[]): ToolCallParser {
  const schemas: Schemas = new Map(tools.map((tool) => [tool.name, tool.parameters ?? {}]));
  return { name: 'qwen3_coder', read: reader(schemas), keepsSpecialTokens: true, withTools: parserFor };
}

export const qwen3CoderParser: ToolCallParser = parserFor([]);
