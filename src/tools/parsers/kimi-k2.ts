/**
 * Kimi K2 (vLLM's `kimi_k2`): the calls sit between <|tool_calls_section_begin|> (or the
 * singular <|tool_call_section_begin|>) and its end marker, each
 * <|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|>{...}<|tool_call_end|>.
 * The "functions.NAME:INDEX" is the call's id, which Kimi's template writes back with the
 * tool's result; the name is its part between the last "." and the ":". The content is the
 * text before the section.
 */
import { InvalidJsonError, scanJson } from '../partial-json.js';
import { partialTagLength, type ToolCallParser, type ToolCallReading, type ToolCallSnapshot } from '../types.js';

const SECTION_BEGINS = ['<|tool_calls_section_begin|>', '<|tool_call_section_begin|>'];
const CALL_BEGIN = '<|tool_call_begin|>';
const ARGUMENT_BEGIN = '<|tool_call_argument_begin|>';

function readCalls(text: string, at: number, calls: ToolCallSnapshot[]): void {
  for (;;) {
    const begin = text.indexOf(CALL_BEGIN, at);
    if (begin === -1) return;
    const argumentsAt = text.indexOf(ARGUMENT_BEGIN, begin);
    if (argumentsAt === -1) return; // the id is not complete yet
    const id = text.slice(begin + CALL_BEGIN.length, argumentsAt).trim();
    if (!/^[^<]+:\d+$/.test(id)) throw new InvalidJsonError(`not a call id: ${JSON.stringify(id)}`);
    const name = id.slice(0, id.lastIndexOf(':')).split('.').at(-1)!;
    const value = scanJson(text, argumentsAt + ARGUMENT_BEGIN.length);
    if (value === null) {
      calls.push({ id, name, arguments: '' });
      return;
    }
    if (value.kind !== 'object') throw new InvalidJsonError('the arguments must be a JSON object');
    calls.push({ id, name, arguments: text.slice(value.start, value.end) });
    if (!value.complete) return;
    at = value.end;
  }
}

function read(text: string, final: boolean): ToolCallReading {
  const starts = SECTION_BEGINS.map((tag) => text.indexOf(tag)).filter((at) => at >= 0);
  if (starts.length === 0) {
    const held = final ? 0 : Math.max(...SECTION_BEGINS.map((tag) => partialTagLength(text, tag)));
    return { content: text.slice(0, text.length - held), calls: [] };
  }
  const first = Math.min(...starts);
  const calls: ToolCallSnapshot[] = [];
  try {
    readCalls(text, first, calls);
  } catch (error) {
    if (!(error instanceof InvalidJsonError)) throw error;
    if (final && calls.length === 0) return { content: text, calls };
  }
  return { content: text.slice(0, first), calls };
}

export const kimiK2Parser: ToolCallParser = { name: 'kimi_k2', read, keepsSpecialTokens: true };
