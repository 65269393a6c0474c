import { GuidedDecodingError } from './errors.js';
import { ANY_CHAR, CharSet, DIGIT, LINE_TERMINATORS, SPACE, WORD } from './char-set.js';

/**
 * Regular expressions as used by guided_regex and JSON Schema "pattern": ECMAScript syntax
 * (which Python's re shares for everything this accepts), read as a language to generate.
 * Constructs that are not regular or that depend on context (backreferences, lookaround,
 * word boundaries, anchors in the middle, Unicode properties, inline flags) are refused
 * with an error naming them.
 */
export type RegexNode =
  | { type: 'set'; set: CharSet }
  | { type: 'seq'; items: RegexNode[] }
  | { type: 'alt'; options: RegexNode[] }
  | { type: 'repeat'; node: RegexNode; min: number; max: number };

/** What a pattern may ask for (maxGuidedRepetition, maxGuidedNestingDepth). */
export interface RegexLimits {
  /** Longest repetition count accepted in {m,n}: larger ones make the grammar huge. */
  maxRepetition: number;
  /** Deepest nesting of groups: the parser and the grammar builder recurse on it. */
  maxDepth: number;
}

const DEFAULT_REGEX_LIMITS: RegexLimits = { maxRepetition: 1000, maxDepth: 64 };

/** A pattern this module cannot turn into a grammar; the message says why. */
export class RegexSupportError extends GuidedDecodingError {}

const DOT = ANY_CHAR.subtract(LINE_TERMINATORS);

function classEscape(letter: string): CharSet | null {
  switch (letter) {
    case 'd':
      return DIGIT;
    case 'D':
      return DIGIT.complement();
    case 'w':
      return WORD;
    case 'W':
      return WORD.complement();
    case 's':
      return SPACE;
    case 'S':
      return SPACE.complement();
    default:
      return null;
  }
}

const CONTROL_ESCAPES: Record<string, number> = { n: 0x0a, r: 0x0d, t: 0x09, f: 0x0c, v: 0x0b };

class Parser {
  private pos = 0;
  private readonly chars: string[];

  constructor(
    pattern: string,
    private readonly limits: RegexLimits,
  ) {
    this.chars = [...pattern];
  }

  parse(): RegexNode {
    const node = this.parseAlternatives(0);
    if (this.pos < this.chars.length) throw this.error(`unmatched ')' at position ${this.pos}`);
    return node;
  }

  private error(message: string): RegexSupportError {
    return new RegexSupportError(message);
  }

  private peek(offset = 0): string | undefined {
    return this.chars[this.pos + offset];
  }

  private parseAlternatives(depth: number): RegexNode {
    const options = [this.parseSequence(depth)];
    while (this.peek() === '|') {
      this.pos++;
      options.push(this.parseSequence(depth));
    }
    return options.length === 1 ? options[0] : { type: 'alt', options };
  }

  private parseSequence(depth: number): RegexNode {
    const items: RegexNode[] = [];
    const start = this.pos;
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === '|' || c === ')') break;
      if (c === '^') {
        // Only as the first thing of a top-level alternative, where it changes nothing.
        if (depth !== 0 || this.pos !== start) throw this.error("the anchor '^' is only supported at the start of the pattern");
        this.pos++;
        continue;
      }
      if (c === '$') {
        this.pos++;
        const next = this.peek();
        if (depth !== 0 || (next !== undefined && next !== '|')) {
          throw this.error("the anchor '$' is only supported at the end of the pattern");
        }
        continue;
      }
      const atom = this.parseAtom(depth);
      items.push(this.parseQuantifier(atom));
    }
    return items.length === 1 ? items[0] : { type: 'seq', items };
  }

  private parseQuantifier(atom: RegexNode): RegexNode {
    const c = this.peek();
    let min: number;
    let max: number;
    if (c === '*') [min, max] = [0, Infinity];
    else if (c === '+') [min, max] = [1, Infinity];
    else if (c === '?') [min, max] = [0, 1];
    else if (c === '{') {
      const bounds = this.readBraces();
      if (bounds === null) return atom;
      [min, max] = bounds;
    } else return atom;
    if (c !== '{') this.pos++;
    if (this.peek() === '?') this.pos++; // lazy: same language
    const next = this.peek();
    if (next === '*' || next === '+' || next === '?' || (next === '{' && this.bracesAhead())) {
      throw this.error('nothing to repeat: a quantifier follows another quantifier');
    }
    return { type: 'repeat', node: atom, min, max };
  }

  private bracesAhead(): boolean {
    const saved = this.pos;
    const bounds = this.readBraces();
    this.pos = saved;
    return bounds !== null;
  }

  /** Reads {n}, {n,} or {n,m} at the cursor; null (cursor unmoved) when it is a literal '{'. */
  private readBraces(): [number, number] | null {
    const rest = this.chars.slice(this.pos).join('');
    const match = /^\{(\d+)(,(\d*))?\}/.exec(rest);
    if (!match) return null;
    const min = Number(match[1]);
    const max = match[2] === undefined ? min : match[3] === '' ? Infinity : Number(match[3]);
    if (max < min) throw this.error(`numbers out of order in quantifier ${match[0]}`);
    const { maxRepetition } = this.limits;
    if (min > maxRepetition || (max !== Infinity && max > maxRepetition)) {
      throw this.error(`repetition counts above ${maxRepetition} are not supported (${match[0]}; maxGuidedRepetition)`);
    }
    this.pos += [...match[0]].length;
    return [min, max];
  }

  private parseAtom(depth: number): RegexNode {
    const c = this.chars[this.pos++];
    switch (c) {
      case '(':
        return this.parseGroup(depth);
      case '[':
        return { type: 'set', set: this.parseClass() };
      case '.':
        return { type: 'set', set: DOT };
      case '\\':
        return { type: 'set', set: this.parseEscape(false) };
      case '*':
      case '+':
      case '?':
        throw this.error(`nothing to repeat before '${c}' at position ${this.pos - 1}`);
      case '{': {
        this.pos--;
        if (this.bracesAhead()) throw this.error(`nothing to repeat before '{' at position ${this.pos}`);
        this.pos++;
        return literalNode('{');
      }
      default:
        return literalNode(c);
    }
  }

  private parseGroup(depth: number): RegexNode {
    if (this.peek() === '?') {
      const next = this.peek(1);
      if (next === ':') this.pos += 2;
      else if (next === '=' || next === '!') throw this.error('lookahead assertions ((?=...), (?!...)) are not supported');
      else if (next === '<' && (this.peek(2) === '=' || this.peek(2) === '!')) {
        throw this.error('lookbehind assertions ((?<=...), (?<!...)) are not supported');
      } else if (next === '<' || (next === 'P' && this.peek(2) === '<')) {
        // Named group (ECMAScript (?<name>...) or Python (?P<name>...)): only the name is skipped.
        const close = this.chars.indexOf('>', this.pos);
        if (close < 0) throw this.error('unterminated group name');
        this.pos = close + 1;
      } else if (next === 'P' && this.peek(2) === '=') {
        throw this.error('backreferences ((?P=name)) are not supported');
      } else {
        throw this.error(`inline flags or group modifiers '(?${next ?? ''}' are not supported`);
      }
    }
    if (depth + 1 > this.limits.maxDepth) {
      throw this.error(`groups nested more than ${this.limits.maxDepth} deep are not supported (maxGuidedNestingDepth)`);
    }
    const inner = this.parseAlternatives(depth + 1);
    if (this.chars[this.pos++] !== ')') throw this.error("missing ')'");
    return inner;
  }

  /** A backslash escape (the backslash is consumed); `inClass` changes the meaning of \b. */
  private parseEscape(inClass: boolean): CharSet {
    const c = this.chars[this.pos++];
    if (c === undefined) throw this.error('the pattern ends with a lone backslash');
    const set = classEscape(c);
    if (set) return set;
    if (c in CONTROL_ESCAPES) return CharSet.of(CONTROL_ESCAPES[c]);
    if (c === 'b' && inClass) return CharSet.of(0x08);
    if (c === 'b' || c === 'B') throw this.error(`word boundary assertions (\\${c}) are not supported`);
    if (c === '0' && !/[0-9]/.test(this.peek() ?? '')) return CharSet.of(0);
    if (/[1-9]/.test(c)) {
      if (inClass) throw this.error(`octal escapes (\\${c}) are not supported`);
      throw this.error(`backreferences (\\${c}) are not supported`);
    }
    if (c === 'k' && !inClass) throw this.error('backreferences (\\k<name>) are not supported');
    if (c === 'p' || c === 'P') throw this.error(`Unicode property escapes (\\${c}{...}) are not supported`);
    if (c === 'x') return CharSet.of(this.readHex(2, 'x'));
    if (c === 'u') {
      if (this.peek() === '{') {
        const close = this.chars.indexOf('}', this.pos);
        const digits = close < 0 ? '' : this.chars.slice(this.pos + 1, close).join('');
        if (!/^[0-9a-fA-F]{1,6}$/.test(digits) || parseInt(digits, 16) > 0x10ffff) throw this.error('invalid \\u{...} escape');
        this.pos = close + 1;
        return CharSet.of(parseInt(digits, 16));
      }
      const unit = this.readHex(4, 'u');
      // A surrogate pair written as two \u escapes is one code point.
      if (unit >= 0xd800 && unit <= 0xdbff && this.peek() === '\\' && this.peek(1) === 'u') {
        const saved = this.pos;
        this.pos += 2;
        const low = this.tryReadHex(4);
        if (low !== null && low >= 0xdc00 && low <= 0xdfff) return CharSet.of(0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00));
        this.pos = saved;
      }
      if (unit >= 0xd800 && unit <= 0xdfff) throw this.error('lone surrogate escapes cannot be generated');
      return CharSet.of(unit);
    }
    if (c === 'c') {
      const letter = this.peek();
      if (letter !== undefined && /[A-Za-z]/.test(letter)) {
        this.pos++;
        return CharSet.of(letter.charCodeAt(0) % 32);
      }
      throw this.error('invalid \\c escape');
    }
    if (/[A-Za-z]/.test(c)) throw this.error(`the escape \\${c} is not supported`);
    return CharSet.fromString(c); // identity escape of a punctuation character
  }

  private tryReadHex(length: number): number | null {
    const digits = this.chars.slice(this.pos, this.pos + length).join('');
    if (digits.length !== length || !/^[0-9a-fA-F]+$/.test(digits)) return null;
    this.pos += length;
    return parseInt(digits, 16);
  }

  private readHex(length: number, letter: string): number {
    const value = this.tryReadHex(length);
    if (value === null) throw this.error(`invalid \\${letter} escape`);
    return value;
  }

  private parseClass(): CharSet {
    let negated = false;
    if (this.peek() === '^') {
      negated = true;
      this.pos++;
    }
    let set = CharSet.EMPTY;
    for (;;) {
      const c = this.peek();
      if (c === undefined) throw this.error("missing ']'");
      if (c === ']') {
        this.pos++;
        break;
      }
      const low = this.parseClassAtom();
      if (this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== undefined) {
        this.pos++;
        const high = this.parseClassAtom();
        const lo = low.single;
        const hi = high.single;
        if (lo === null || hi === null) {
          // As ECMAScript (Annex B) reads [\d-z]: the '-' is literal.
          set = set.union(low).union(high).union(CharSet.fromString('-'));
          continue;
        }
        if (lo > hi) throw this.error('range out of order in character class');
        set = set.union(CharSet.of([lo, hi]));
      } else set = set.union(low);
    }
    return negated ? set.complement() : set;
  }

  private parseClassAtom(): CharSet {
    const c = this.chars[this.pos++];
    if (c === '\\') {
      if (this.peek() === '-') {
        this.pos++;
        return CharSet.fromString('-');
      }
      return this.parseEscape(true);
    }
    return CharSet.fromString(c);
  }
}

function literalNode(char: string): RegexNode {
  return { type: 'set', set: CharSet.fromString(char) };
}

/** Checks the pattern is a valid ECMAScript regular expression, then parses it. */
export function parseRegex(pattern: string, limits: RegexLimits = DEFAULT_REGEX_LIMITS): RegexNode {
  // Python's named groups (?P<name>...) are read as ECMAScript's (?<name>...).
  const ecmaScript = pattern.replace(/\(\?P</g, '(?<');
  try {
    new RegExp(ecmaScript, 'u');
  } catch {
    try {
      new RegExp(ecmaScript);
    } catch (error) {
      throw new RegexSupportError(`invalid regular expression: ${(error as Error).message}`);
    }
  }
  return new Parser(pattern, limits).parse();
}

/** Shortest and longest string the node matches, in code points (max may be Infinity). */
export function regexLengthBounds(node: RegexNode): { min: number; max: number } {
  switch (node.type) {
    case 'set':
      return { min: 1, max: 1 };
    case 'seq':
      return node.items.map(regexLengthBounds).reduce((a, b) => ({ min: a.min + b.min, max: a.max + b.max }), { min: 0, max: 0 });
    case 'alt': {
      const bounds = node.options.map(regexLengthBounds);
      return { min: Math.min(...bounds.map((b) => b.min)), max: Math.max(...bounds.map((b) => b.max)) };
    }
    case 'repeat': {
      const inner = regexLengthBounds(node.node);
      const max = node.max === 0 || inner.max === 0 ? 0 : inner.max * node.max;
      return { min: inner.min * node.min, max };
    }
  }
}
