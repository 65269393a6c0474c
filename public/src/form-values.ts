/**
 * Field text → the JSON value sent. Text that is not a well-formed value is sent as it
 * is (a string), so the server's validation explains what is wrong with it rather than
 * the page silently dropping or rounding it. Integers beyond 2^53 become bigint so that
 * a uint64 seed reaches the server digit for digit.
 */
import type { ParamKind } from './params.js';

/** A parameter field's contents: text, or a checkbox state. */
export type RawValue = string | boolean;

const INTEGER = /^[+-]?\d+$/;
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

function integer(text: string): number | bigint {
  const big = BigInt(text);
  return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
}

function number(text: string): number | bigint | string {
  if (INTEGER.test(text)) return integer(text);
  if (DECIMAL.test(text)) return Number(text);
  return text;
}

/** "\n", "\t", "\r" and "\\" inside a stop line; other backslashes stay as they are. */
export function unescapeStop(line: string): string {
  return line.replace(/\\([ntr\\])/g, (_, c: string) => ({ n: '\n', t: '\t', r: '\r', '\\': '\\' })[c]!);
}

export function escapeStop(text: string): string {
  return text.replace(/[\\\n\t\r]/g, (c) => ({ '\\': '\\\\', '\n': '\\n', '\t': '\\t', '\r': '\\r' })[c]!);
}

/** undefined: the field is unset and the parameter is left out of the request. */
export function toJsonValue(kind: ParamKind, raw: RawValue, boolDefault = false): unknown {
  if (kind === 'bool') return raw === boolDefault ? undefined : raw;
  if (typeof raw !== 'string') return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  switch (kind) {
    case 'float':
    case 'int':
      return number(text);
    case 'seed':
      return INTEGER.test(text) ? BigInt(text) : text;
    case 'stop': {
      // Only whitespace-only lines are dropped; spaces inside a stop string matter.
      const lines = raw.split('\n').filter((line) => line.trim() !== '');
      return lines.map(unescapeStop);
    }
    case 'token-ids':
      return text.split(/[\s,]+/).filter((t) => t !== '').map(number);
    case 'json':
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    case 'text':
      // As typed: a regular expression's spaces and backslashes are its own.
      return raw;
  }
}

/** The field text for a value (the inverse of toJsonValue), for importing a request. */
export function fromJsonValue(kind: ParamKind, value: unknown): RawValue {
  if (kind === 'bool') return value === true;
  if (value === undefined || value === null) return '';
  switch (kind) {
    case 'stop':
      return (Array.isArray(value) ? value : [value]).map((s) => escapeStop(String(s))).join('\n');
    case 'token-ids':
      return Array.isArray(value) ? value.join(', ') : String(value);
    case 'json':
      return typeof value === 'string' ? value : JSON.stringify(value);
    default:
      return String(value);
  }
}
