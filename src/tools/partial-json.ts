/**
 * A JSON scanner for model output that may stop anywhere: it reads as far as the text
 * goes and says which values are complete, keeping each value's span in the text. Tool
 * calls are streamed from those spans: the raw text of a partial "arguments" value is
 * always a prefix of its final text, so it can be sent as argument fragments.
 */

export type PartialJson =
  | { kind: 'object'; start: number; end: number; complete: boolean; entries: PartialEntry[] }
  | { kind: 'array'; start: number; end: number; complete: boolean; items: PartialJson[] }
  | { kind: 'string'; start: number; end: number; complete: boolean; value: string }
  | { kind: 'scalar'; start: number; end: number; complete: boolean; value: unknown };

export interface PartialEntry {
  key: string;
  /** undefined until the value has started. */
  value?: PartialJson;
}

/** Thrown for text that cannot be the start of JSON: the scanner's caller decides what that means. */
export class InvalidJsonError extends Error {}

function skipSpace(text: string, at: number): number {
  while (at < text.length && ' \t\n\r'.includes(text[at]!)) at++;
  return at;
}

/**
 * Scans one JSON value starting at `start` (after optional whitespace). Returns null
 * when the text ends before the value starts. `end` of a complete value is just past it;
 * of an incomplete one, the end of the text.
 */
export function scanJson(text: string, start: number): PartialJson | null {
  const at = skipSpace(text, start);
  if (at >= text.length) return null;
  const char = text[at]!;
  if (char === '{') return scanObject(text, at);
  if (char === '[') return scanArray(text, at);
  if (char === '"') return scanString(text, at);
  return scanScalar(text, at);
}

function scanString(text: string, start: number): PartialJson {
  let value = '';
  let at = start + 1;
  while (at < text.length) {
    const char = text[at]!;
    if (char === '"') return { kind: 'string', start, end: at + 1, complete: true, value };
    if (char === '\\') {
      if (at + 1 >= text.length) break;
      const escape = text[at + 1]!;
      if (escape === 'u') {
        if (at + 6 > text.length) break;
        const hex = text.slice(at + 2, at + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new InvalidJsonError(`bad \\u escape at ${at}`);
        value += String.fromCharCode(parseInt(hex, 16));
        at += 6;
        continue;
      }
      const simple: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
      if (!(escape in simple)) throw new InvalidJsonError(`bad escape \\${escape} at ${at}`);
      value += simple[escape];
      at += 2;
      continue;
    }
    value += char;
    at++;
  }
  return { kind: 'string', start, end: text.length, complete: false, value };
}

const SCALAR = /^(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null)/;

function scanScalar(text: string, start: number): PartialJson {
  const rest = text.slice(start);
  const match = SCALAR.exec(rest);
  if (match && start + match[0].length < text.length) {
    return { kind: 'scalar', start, end: start + match[0].length, complete: true, value: JSON.parse(match[0]) };
  }
  // At the end of the text a number may go on, a literal may be cut: accept what could still grow.
  if (/^-?[0-9.eE+-]*$/.test(rest) || ['true', 'false', 'null'].some((word) => word.startsWith(rest))) {
    return { kind: 'scalar', start, end: text.length, complete: false, value: undefined };
  }
  if (match) return { kind: 'scalar', start, end: start + match[0].length, complete: true, value: JSON.parse(match[0]) };
  throw new InvalidJsonError(`unexpected ${JSON.stringify(text[start])} at ${start}`);
}

function scanObject(text: string, start: number): PartialJson {
  const entries: PartialEntry[] = [];
  const node = { kind: 'object' as const, start, end: text.length, complete: false, entries };
  let at = skipSpace(text, start + 1);
  if (text[at] === '}') return { ...node, end: at + 1, complete: true };
  for (;;) {
    if (at >= text.length) return node;
    if (text[at] !== '"') throw new InvalidJsonError(`expected a key at ${at}`);
    const key = scanString(text, at);
    if (!key.complete) return node;
    const entry: PartialEntry = { key: (key as { value: string }).value };
    at = skipSpace(text, key.end);
    if (at >= text.length) return node;
    if (text[at] !== ':') throw new InvalidJsonError(`expected ":" at ${at}`);
    entries.push(entry);
    const value = scanJson(text, at + 1);
    if (value === null) return node;
    entry.value = value;
    if (!value.complete) return node;
    at = skipSpace(text, value.end);
    if (at >= text.length) return node;
    if (text[at] === '}') return { ...node, end: at + 1, complete: true };
    if (text[at] !== ',') throw new InvalidJsonError(`expected "," or "}" at ${at}`);
    at = skipSpace(text, at + 1);
  }
}

function scanArray(text: string, start: number): PartialJson {
  const items: PartialJson[] = [];
  const node = { kind: 'array' as const, start, end: text.length, complete: false, items };
  let at = skipSpace(text, start + 1);
  if (text[at] === ']') return { ...node, end: at + 1, complete: true };
  for (;;) {
    const item = scanJson(text, at);
    if (item === null) return node;
    items.push(item);
    if (!item.complete) return node;
    at = skipSpace(text, item.end);
    if (at >= text.length) return node;
    if (text[at] === ']') return { ...node, end: at + 1, complete: true };
    if (text[at] !== ',') throw new InvalidJsonError(`expected "," or "]" at ${at}`);
    at = skipSpace(text, at + 1);
  }
}

/** The value of `key` in a scanned object, if it has started. */
export function entryValue(node: PartialJson, key: string): PartialJson | undefined {
  if (node.kind !== 'object') return undefined;
  return node.entries.find((entry) => entry.key === key)?.value;
}
