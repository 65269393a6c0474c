/** The reasoning parsers by name, as vLLM's --reasoning-parser names them. */
import { deepseekR1Parser } from './deepseek-r1.js';
import { deepseekV3Parser } from './deepseek-v3.js';
import { qwen3Parser } from './qwen3.js';
import type { ReasoningParserFactory } from './types.js';

export const REASONING_PARSERS = {
  deepseek_r1: deepseekR1Parser,
  deepseek_v3: deepseekV3Parser,
  qwen3: qwen3Parser,
} as const satisfies Record<string, ReasoningParserFactory>;

export type ReasoningParserName = keyof typeof REASONING_PARSERS;

export const REASONING_PARSER_NAMES = Object.keys(REASONING_PARSERS) as ReasoningParserName[];
