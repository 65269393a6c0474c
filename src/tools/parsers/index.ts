/** The tool-call parsers by name, as vLLM's --tool-call-parser names them. */
import type { ToolCallParser } from '../types.js';
import { hermesParser } from './hermes.js';
import { llama3JsonParser } from './llama3-json.js';
import { mistralParser } from './mistral.js';
import { pythonicParser } from './pythonic.js';

export const TOOL_CALL_PARSERS = {
  hermes: hermesParser,
  llama3_json: llama3JsonParser,
  mistral: mistralParser,
  pythonic: pythonicParser,
} as const satisfies Record<string, ToolCallParser>;

export type ToolCallParserName = keyof typeof TOOL_CALL_PARSERS;

export const TOOL_CALL_PARSER_NAMES = Object.keys(TOOL_CALL_PARSERS) as ToolCallParserName[];
