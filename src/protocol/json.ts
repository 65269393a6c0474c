/**
 * A JSON body parser with JSON.parse's semantics, except that integer literals outside
 * Number's safe-integer range come back as `bigint`. Node 20's JSON.parse rounds
 * 18446744073709551615 to 18446744073709552000 before any reviver can see the source
 * text, which would silently change a uint64 `seed`.
 *
 * Only literals without a fraction or exponent are candidates: `1e20` and `12.0` are
 * floats in JSON's data model and stay numbers, as JSON.parse would return them.
 *
 * A number literal longer than MAX_NUMBER_LITERAL_CHARS is refused, naming the field,
 * from its length alone: converting a 16 MB literal to a bigint takes seconds (the cost
 * grows with the square of the digits), and no field means anything with that many digits.
 */
import { invalidRequest } from '../common/protocol-error.js';
import { formatPath } from '../common/zod-issues.js';

/** Deeper nesting than any request needs; bounds the parser's recursion. */
export const MAX_JSON_DEPTH = 512;

/**
 * The longest number literal read (and the longest numeric string lax coercion reads):
 * a uint64 seed has 20 digits, a float printed exactly ~25 characters; 100 leaves room
 * for any real client and keeps every conversion to microseconds.
 */
export const MAX_NUMBER_LITERAL_CHARS = 100;

/** The start of a long value for an error message: never more than `max` characters of it. */
export function clipForMessage(text: string, max = 40): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * The longest body handed to JSON.parse when it gives the parser's own result (nativeParse):
 * JSON.parse reads 64 KiB in well under a millisecond, so the loop is never held for long.
 */
export const NATIVE_PARSE_MAX_CHARS = 64 * 1024;
/** Sixteen digits in a row: the only way a literal can be an integer beyond 2^53 (fifteen digits stay below 10^15). */
const SIXTEEN_DIGITS = /[0-9]{16}/;

/**
 * JSON.parse's value of `text` when it is exactly what JsonParser would return, else
 * undefined (parse it with JsonParser). The parser differs from JSON.parse only in bigints
 * (integer literals beyond the safe range need 16+ digits in a row), its depth bound (a text
 * with at most MAX_JSON_DEPTH brackets cannot nest deeper) and its refusals (number
 * literals over MAX_NUMBER_LITERAL_CHARS, which without 16 digits in a row cannot exceed
 * ~50 characters; invalid JSON, for which JSON.parse throws and the parser gives its
 * message). A request body is a few hundred characters: this is the usual path, ~5× as
 * fast as the parser's.
 */
function nativeParse(text: string): { value: unknown } | undefined {
  if (text.length > NATIVE_PARSE_MAX_CHARS || SIXTEEN_DIGITS.test(text)) return undefined;
  if (text.length > MAX_JSON_DEPTH) {
    let brackets = 0;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if ((code === 0x5b || code === 0x7b) && ++brackets > MAX_JSON_DEPTH) return undefined;
    }
  }
  try {
    return { value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

/** Parses in one synchronous pass (small texts: a gateway's own body, tests). */
export function parseJsonBody(text: string): unknown {
  const native = nativeParse(text);
  if (native !== undefined) return native.value;
  const run = new JsonParser(text, Infinity).parseDocument();
  for (;;) {
    const step = run.next();
    if (step.done) return step.value;
  }
}

/**
 * How long the parser runs before it lets the event loop go. A 16 MiB body of small numbers
 * or escapes is millions of values: parsed in one pass it held the loop for 2–5 s (issue 24's
 * re-check; JSON.parse itself took 2.5 s on 8 M numbers under load).
 */
export const JSON_PARSE_SLICE_MS = 10;

/**
 * Parses as parseJsonBody does, giving the event loop back (`yieldToLoop`) after every
 * JSON_PARSE_SLICE_MS of work, so a huge body never freezes other requests.
 */
export async function parseJsonBodyInSlices(text: string, yieldToLoop: () => Promise<void>): Promise<unknown> {
  const native = nativeParse(text);
  if (native !== undefined) return native.value;
  const run = new JsonParser(text, JSON_PARSE_SLICE_MS).parseDocument();
  for (;;) {
    const step = run.next();
    if (step.done) return step.value;
    await yieldToLoop();
  }
}

/** Parsing work, checked against the clock once per this many values or escapes. */
const CLOCK_CHECK_EVERY = 1024;

/** Whitespace JSON allows between tokens: space, tab, LF, CR. */
const WHITESPACE = /[ \t\n\r]*/y;
/** A run of string characters needing no further attention: no quote, backslash or control character. */
const PLAIN_STRING_RUN = /[^"\\\u0000-\u001f]*/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const HEX4 = /^[0-9a-fA-F]{4}$/;

const SIMPLE_ESCAPES: Record<string, string> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

/**
 * A generator: it yields (pauses) when its time slice is used up, between values or
 * escapes, and returns the document. Containers and escaped strings are generators;
 * numbers, literals and plain strings are read directly (most values, at full speed).
 */
class JsonParser {
  private pos = 0;
  /** Keys and indexes down to the value being parsed, to name a refused number's field. */
  private readonly path: (string | number)[] = [];
  private work = 0;
  private sliceEnd: number;

  constructor(
    private readonly text: string,
    private readonly sliceMs: number,
  ) {
    this.sliceEnd = sliceMs === Infinity ? Infinity : performance.now() + sliceMs;
  }

  /** True when the slice is over (checked once per CLOCK_CHECK_EVERY units of work). */
  private sliceOver(): boolean {
    if (++this.work % CLOCK_CHECK_EVERY !== 0 || this.sliceMs === Infinity) return false;
    if (performance.now() < this.sliceEnd) return false;
    return true;
  }

  private startSlice(): void {
    this.sliceEnd = performance.now() + this.sliceMs;
  }

  *parseDocument(): Generator<void, unknown> {
    this.skipWhitespace();
    if (this.pos >= this.text.length) this.fail('the body is empty, expected a JSON value');
    const value = yield* this.parseValue(0);
    this.skipWhitespace();
    if (this.pos < this.text.length) this.fail('unexpected data after the JSON value');
    return value;
  }

  /** A value inside a container: containers and escaped strings are delegated, the rest read at once. */
  private *parseValue(depth: number): Generator<void, unknown> {
    if (this.sliceOver()) {
      yield;
      this.startSlice();
    }
    const ch = this.text[this.pos];
    switch (ch) {
      case '{':
        return yield* this.parseObject(depth + 1);
      case '[':
        return yield* this.parseArray(depth + 1);
      case '"':
        return this.parsePlainString() ?? (yield* this.parseString());
      default:
        return this.parseScalar(ch);
    }
  }

  private parseScalar(ch: string | undefined): unknown {
    switch (ch) {
      case 't':
        return this.parseLiteral('true', true);
      case 'f':
        return this.parseLiteral('false', false);
      case 'n':
        return this.parseLiteral('null', null);
      default:
        if (ch === '-' || (ch !== undefined && ch >= '0' && ch <= '9')) return this.parseNumber();
        this.fail(ch === undefined ? 'unexpected end of input, expected a value' : `unexpected ${describeChar(ch)}, expected a value`);
    }
  }

  private *parseObject(depth: number): Generator<void, Record<string, unknown>> {
    this.checkDepth(depth);
    this.pos++; // '{'
    const result: Record<string, unknown> = {};
    this.skipWhitespace();
    if (this.text[this.pos] === '}') {
      this.pos++;
      return result;
    }
    for (;;) {
      this.skipWhitespace();
      if (this.text[this.pos] !== '"') this.failExpected('a property name in double quotes');
      const key = this.parsePlainString() ?? (yield* this.parseString());
      this.skipWhitespace();
      if (this.text[this.pos] !== ':') this.failExpected("':' after the property name");
      this.pos++;
      this.skipWhitespace();
      this.path.push(key);
      const value = yield* this.parseValue(depth);
      this.path.pop();
      if (key === '__proto__') {
        // JSON.parse makes "__proto__" an ordinary own property; plain assignment would
        // replace the object's prototype instead.
        Object.defineProperty(result, key, { value, writable: true, enumerable: true, configurable: true });
      } else {
        result[key] = value;
      }
      this.skipWhitespace();
      const next = this.text[this.pos];
      if (next === ',') {
        this.pos++;
        continue;
      }
      if (next === '}') {
        this.pos++;
        return result;
      }
      this.failExpected("',' or '}' in the object");
    }
  }

  private *parseArray(depth: number): Generator<void, unknown[]> {
    this.checkDepth(depth);
    this.pos++; // '['
    const result: unknown[] = [];
    this.skipWhitespace();
    if (this.text[this.pos] === ']') {
      this.pos++;
      return result;
    }
    for (;;) {
      this.skipWhitespace();
      this.path.push(result.length);
      result.push(yield* this.parseValue(depth));
      this.path.pop();
      this.skipWhitespace();
      const next = this.text[this.pos];
      if (next === ',') {
        this.pos++;
        continue;
      }
      if (next === ']') {
        this.pos++;
        return result;
      }
      this.failExpected("',' or ']' in the array");
    }
  }

  /** A string with no escape, read at once; undefined (nothing consumed) when it has one. */
  private parsePlainString(): string | undefined {
    PLAIN_STRING_RUN.lastIndex = this.pos + 1;
    PLAIN_STRING_RUN.test(this.text);
    const end = PLAIN_STRING_RUN.lastIndex;
    if (this.text[end] !== '"') return undefined;
    const out = this.text.slice(this.pos + 1, end);
    this.pos = end + 1;
    return out;
  }

  private *parseString(): Generator<void, string> {
    const start = this.pos;
    this.pos++; // opening quote
    let out = '';
    for (;;) {
      PLAIN_STRING_RUN.lastIndex = this.pos;
      PLAIN_STRING_RUN.test(this.text);
      out += this.text.slice(this.pos, PLAIN_STRING_RUN.lastIndex);
      this.pos = PLAIN_STRING_RUN.lastIndex;
      const ch = this.text[this.pos];
      if (ch === '"') {
        this.pos++;
        return out;
      }
      if (ch === '\\') {
        out += this.parseEscape();
        if (this.sliceOver()) {
          yield;
          this.startSlice();
        }
        continue;
      }
      if (ch === undefined) this.fail('unterminated string', start);
      this.fail(`unescaped ${describeChar(ch)} in a string`);
    }
  }

  private parseEscape(): string {
    const ch = this.text[this.pos + 1];
    if (ch === 'u') {
      const hex = this.text.slice(this.pos + 2, this.pos + 6);
      if (!HEX4.test(hex)) this.fail('invalid \\u escape: expected 4 hexadecimal digits');
      this.pos += 6;
      // Lone surrogates are kept, as JSON.parse keeps them.
      return String.fromCharCode(parseInt(hex, 16));
    }
    const simple = ch === undefined ? undefined : SIMPLE_ESCAPES[ch];
    if (simple === undefined) this.fail(ch === undefined ? 'unterminated string' : `invalid escape '\\${ch}' in a string`);
    this.pos += 2;
    return simple;
  }

  private parseNumber(): number | bigint {
    NUMBER.lastIndex = this.pos;
    const match = NUMBER.exec(this.text);
    if (match === null) this.fail('invalid number');
    const literal = match[0];
    if (literal.length > MAX_NUMBER_LITERAL_CHARS) {
      const param = formatPath(this.path);
      throw invalidRequest(
        `${param ?? 'The request body'} is a number literal of ${literal.length} characters (${clipForMessage(literal, 20)}); numbers may have at most ${MAX_NUMBER_LITERAL_CHARS} characters.`,
        param,
      );
    }
    this.pos += literal.length;
    const isInteger = match[1] === undefined && match[2] === undefined;
    const value = Number(literal);
    if (isInteger && !Number.isSafeInteger(value)) return BigInt(literal);
    return value;
  }

  private parseLiteral<T>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.pos)) this.fail(`unexpected ${describeChar(this.text[this.pos]!)}, expected a value`);
    this.pos += word.length;
    return value;
  }

  private skipWhitespace(): void {
    WHITESPACE.lastIndex = this.pos;
    WHITESPACE.test(this.text);
    this.pos = WHITESPACE.lastIndex;
  }

  private checkDepth(depth: number): void {
    if (depth > MAX_JSON_DEPTH) this.fail(`JSON nesting deeper than ${MAX_JSON_DEPTH} levels`);
  }

  private failExpected(what: string): never {
    const ch = this.text[this.pos];
    this.fail(ch === undefined ? `unexpected end of input, expected ${what}` : `unexpected ${describeChar(ch)}, expected ${what}`);
  }

  private fail(problem: string, at: number = this.pos): never {
    const { line, column } = lineAndColumn(this.text, at);
    throw invalidRequest(`Invalid JSON in the request body: ${problem} at line ${line} column ${column} (character ${at}).`);
  }
}

function describeChar(ch: string): string {
  const code = ch.charCodeAt(0);
  if (code < 0x20 || code === 0x7f) return `control character U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  return `'${ch}'`;
}

function lineAndColumn(text: string, at: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < at; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: at - lineStart + 1 };
}
