/**
 * tool_choice named or "required": the output is constrained by a JSON Schema made from
 * the tools (vLLM's approach), so the calls are read straight out of it.
 */
import { InvalidJsonError, scanJson } from './partial-json.js';
import { callFromObject } from './json-calls.js';
import type { OutputReader } from './tool-call-stream.js';
import type { ToolCallSnapshot } from './types.js';

export interface FunctionTool {
  name: string;
  parameters?: Record<string, unknown>;
}

/** A tool's parameters schema; a tool without one takes any object. */
function parametersSchema(tool: FunctionTool): Record<string, unknown> {
  return tool.parameters ?? { type: 'object' };
}

/** Named tool_choice: the output is the arguments object of that one function. */
export function namedToolSchema(tool: FunctionTool): Record<string, unknown> {
  return parametersSchema(tool);
}

/**
 * "required": a list of one or more calls, each {"name": <one of the tools>,
 * "parameters": <that tool's arguments>} (vLLM's schema; compact JSON, properties in
 * schema order, so the name always comes first). parallel_tool_calls false: one call.
 */
export function requiredToolsSchema(tools: readonly FunctionTool[], parallel: boolean): Record<string, unknown> {
  return {
    type: 'array',
    minItems: 1,
    ...(parallel ? {} : { maxItems: 1 }),
    items: {
      anyOf: tools.map((tool) => ({
        type: 'object',
        properties: { name: { const: tool.name }, parameters: parametersSchema(tool) },
        required: ['name', 'parameters'],
        additionalProperties: false,
      })),
    },
  };
}

/** Reads the named tool's arguments, the whole output: the call is known before any token. */
export function namedToolReader(name: string): OutputReader {
  return (text) => ({ content: '', calls: [{ name, arguments: text }] });
}

/** Reads the "required" list of calls as it grows. */
export const requiredToolsReader: OutputReader = (text) => {
  const calls: ToolCallSnapshot[] = [];
  let list;
  try {
    list = scanJson(text, 0);
  } catch (error) {
    if (error instanceof InvalidJsonError) return { content: '', calls };
    throw error;
  }
  if (list === null || list.kind !== 'array') return { content: '', calls };
  for (const item of list.items) {
    const call = callFromObject(text, item, ['parameters', 'arguments']);
    if (call === null) break;
    calls.push(call);
  }
  return { content: '', calls };
};
