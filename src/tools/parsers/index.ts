/** The tool-call parsers by name, as vLLM's --tool-call-parser names them. */
import type { ToolCallParser } from '../types.js';
import { deepseekV3Parser } from './deepseek-v3.js';
import { glm45Parser } from './glm45.js';
import { graniteParser } from './granite.js';
import { hermesParser } from './hermes.js';
import { kimiK2Parser } from './kimi-k2.js';
import { llama3JsonParser } from './llama3-json.js';
import { mistralParser } from './mistral.js';
import { pythonicParser } from './pythonic.js';
import { qwen3CoderParser } from './qwen3-coder.js';

export const TOOL_CALL_PARSERS = {
  deepseek_v3: deepseekV3Parser,
  glm45: glm45Parser,
  granite: graniteParser,
  hermes: hermesParser,
  kimi_k2: kimiK2Parser,
  llama3_json: llama3JsonParser,
  mistral: mistralParser,
  pythonic: pythonicParser,
  qwen3_coder: qwen3CoderParser,
} as const satisfies Record<string, ToolCallParser>;

export type ToolCallParserName = keyof typeof TOOL_CALL_PARSERS;

export const TOOL_CALL_PARSER_NAMES = Object.keys(TOOL_CALL_PARSERS) as ToolCallParserName[];
