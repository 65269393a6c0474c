/**
 * DeepSeek V3 / R1 (vLLM's `deepseek_v3`): the calls follow <｜tool▁calls▁begin｜>, each
 * <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME, a newline, then its arguments as a
 * fenced ```json block, then <｜tool▁call▁end｜>; the section ends with <｜tool▁calls▁end｜>.
 * The content is the text before the section. The markers are special tokens.
 */
import { InvalidJsonError, scanJson } from '../partial-json.js';
import { partialTagLength, type ToolCallParser, type ToolCallReading, type ToolCallSnapshot } from '../types.js';

const CALLS_BEGIN = '<｜tool▁calls▁begin｜>';
const CALL_BEGIN = '<｜tool▁call▁begin｜>';
const SEP = '<｜tool▁sep｜>';
const FENCE = '```json\n';

function readCalls(text: string, at: number, calls: ToolCallSnapshot[]): void {
  for (;;) {
    const begin = text.indexOf(CALL_BEGIN, at);
    if (begin === -1) return;
    const sep = text.indexOf(SEP, begin);
    if (sep === -1) return;
    const newline = text.indexOf('\n', sep);
    if (newline === -1) return; // the name is not complete yet
    const name = text.slice(sep + SEP.length, newline).trim();
    if (!/^[A-Za-z_][\w.-]*$/.test(name)) throw new InvalidJsonError(`not a function name: ${JSON.stringify(name)}`);
    const fenced = text.slice(newline + 1, newline + 1 + FENCE.length);
    if (fenced !== FENCE) {
      if (FENCE.startsWith(fenced)) calls.push({ name, arguments: '' });
      else throw new InvalidJsonError('expected a ```json block');
      return;
    }
    const value = scanJson(text, newline + 1 + FENCE.length);
    if (value === null) {
      calls.push({ name, arguments: '' });
      return;
    }
    if (value.kind !== 'object') throw new InvalidJsonError('the arguments must be a JSON object');
    calls.push({ name, arguments: text.slice(value.start, value.end) });
    if (!value.complete) return;
    at = value.end;
  }
}

function read(text: string, final: boolean): ToolCallReading {
  const first = text.indexOf(CALLS_BEGIN);
  if (first === -1) return { content: final ? text : text.slice(0, text.length - partialTagLength(text, CALLS_BEGIN)), calls: [] };
  const calls: ToolCallSnapshot[] = [];
  try {
    readCalls(text, first + CALLS_BEGIN.length, calls);
  } catch (error) {
    if (!(error instanceof InvalidJsonError)) throw error;
    if (final && calls.length === 0) return { content: text, calls };
  }
  return { content: text.slice(0, first), calls };
}

export const deepseekV3Parser: ToolCallParser = { name: 'deepseek_v3', read, keepsSpecialTokens: true };
