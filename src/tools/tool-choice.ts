/**
 * How a chat request's tools are served, from tool_choice (vLLM's rules):
 * - "none" (or no tools): the tools only reach the chat template;
 * - a named function: the output is constrained to that function's arguments;
 * - "required": the output is constrained to a list of one or more calls;
 * - "auto" (the default with tools): the model writes freely and the configured
 *   tool-call parser reads calls out of its text.
 */
import { namedToolReader, namedToolSchema, requiredToolsReader, requiredToolsSchema, type FunctionTool } from './constrained.js';
import { TOOL_CALL_PARSERS, TOOL_CALL_PARSER_NAMES, type ToolCallParserName } from './parsers/index.js';
import { parserReader, type OutputReader } from './tool-call-stream.js';
import type { ToolCallParser } from './types.js';

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

export interface ToolRequest {
  tools?: ReadonlyArray<{ type: 'function'; function: FunctionTool }>;
  tool_choice?: ToolChoice;
  parallel_tool_calls?: boolean;
}

/** How the output of a request with tool calling is read and reported. */
export interface ToolCalling {
  reader: OutputReader;
  newCallId?: () => string;
  /**
   * finish_reason of a choice that ended with "stop" and called tools: vLLM reports a
   * named call as "stop" and the others as "tool_calls".
   */
  finishReason: 'stop' | 'tool_calls';
  /** The JSON Schema the output must follow (named and "required"); none for "auto". */
  schema?: Record<string, unknown>;
  /** The parser's tags are special tokens: they must stay in the text. */
  keepSpecialTokens: boolean;
}

/** Why the request's tool_choice cannot be served; the route makes it a 400 on `tool_choice`. */
export class ToolChoiceError extends Error {}

/** tool_choice as vLLM resolves it: "auto" when tools are given without a choice. */
export function effectiveToolChoice(request: ToolRequest): ToolChoice {
  if (request.tool_choice !== undefined) return request.tool_choice;
  return request.tools !== undefined && request.tools.length > 0 ? 'auto' : 'none';
}

/** null: the tools (if any) are only handed to the chat template. */
export function toolCalling(request: ToolRequest, parserName: ToolCallParserName | undefined): ToolCalling | null {
  const choice = effectiveToolChoice(request);
  const tools = (request.tools ?? []).map((tool) => tool.function);
  if (choice === 'none') return null;
  if (tools.length === 0) {
    if (choice === 'auto') return null;
    throw new ToolChoiceError(`tool_choice ${typeof choice === 'object' ? 'naming a function' : `"${choice}"`} needs at least one tool in \`tools\``);
  }
  if (typeof choice === 'object') {
    const tool = tools.find((candidate) => candidate.name === choice.function.name);
    if (tool === undefined) throw new ToolChoiceError(`The tool specified in \`tool_choice\` does not match any of the specified \`tools\``);
    return { reader: namedToolReader(tool.name), finishReason: 'stop', schema: namedToolSchema(tool), keepSpecialTokens: false };
  }
  if (choice === 'required') {
    const parallel = request.parallel_tool_calls ?? true;
    return { reader: requiredToolsReader, finishReason: 'tool_calls', schema: requiredToolsSchema(tools, parallel), keepSpecialTokens: false };
  }
  if (parserName === undefined) {
    throw new ToolChoiceError(
      `"auto" tool choice needs a tool-call parser: start the server with the toolCallParser setting (${TOOL_CALL_PARSER_NAMES.slice(0, -1).join(', ')} or ${TOOL_CALL_PARSER_NAMES.at(-1)}, the one for the model's format). Send tool_choice "required" or a named tool to have calls made through structured output, or "none" to pass the tools to the chat template only.`,
    );
  }
  const registered: ToolCallParser = TOOL_CALL_PARSERS[parserName];
  const parser = registered.withTools ? registered.withTools(tools) : registered;
  return {
    reader: parserReader(parser),
    newCallId: parser.newCallId,
    finishReason: 'tool_calls',
    keepSpecialTokens: parser.keepsSpecialTokens,
  };
}
