import { grammarTooLarge } from './errors.js';
/**
 * Building blocks for the EBNF grammars handed to XGrammar's compileGrammar.
 *
 * Expressions are plain strings in XGrammar's EBNF dialect: "literal", [class], rule names,
 * juxtaposition for sequences, `|`, parentheses and the quantifiers * + ? {m,n}.
 */

/** The empty sequence. */
export const EMPTY = '""';

function hex(codePoint: number, width: number): string {
  return codePoint.toString(16).padStart(width, '0');
}

/** A code point as an escape the EBNF parser reads back as that code point. */
export function escapeCodePoint(codePoint: number): string {
  return codePoint <= 0xffff ? `\\u${hex(codePoint, 4)}` : `\\U${hex(codePoint, 8)}`;
}

/** A string literal matching exactly `text` (printable ASCII kept readable, the rest escaped). */
export function literal(text: string): string {
  if (text === '') return EMPTY;
  let out = '"';
  for (const char of text) {
    const c = char.codePointAt(0)!;
    if (char === '"' || char === '\\') out += `\\${char}`;
    else if (c >= 0x20 && c < 0x7f) out += char;
    else out += escapeCodePoint(c);
  }
  return `${out}"`;
}

/** A sequence; empty parts are dropped. */
export function seq(...parts: string[]): string {
  const kept = parts.filter((p) => p !== EMPTY && p !== '');
  return kept.length === 0 ? EMPTY : kept.join(' ');
}

/** A choice between alternatives (duplicates removed). */
export function alt(options: readonly string[]): string {
  const unique = [...new Set(options)];
  if (unique.length === 0) throw new Error('alt() needs at least one alternative');
  return unique.length === 1 ? unique[0] : `(${unique.join(' | ')})`;
}

const ATOM = /^(?:[A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\])$/s;

/** A rule name, one literal or one character class: needs no parentheses. */
function isAtom(expr: string): boolean {
  return ATOM.test(expr);
}

/** `expr` repeated between min and max times (max Infinity for unbounded). */
export function repeat(expr: string, min: number, max: number): string {
  if (max === 0 || expr === EMPTY) return EMPTY;
  const body = isAtom(expr) ? expr : `(${expr})`;
  if (min === 0 && max === Infinity) return `${body}*`;
  if (min === 1 && max === Infinity) return `${body}+`;
  if (min === 0 && max === 1) return `${body}?`;
  if (min === 1 && max === 1) return expr;
  if (max === Infinity) return `${body}{${min},}`;
  if (min === max) return `${body}{${min}}`;
  return `${body}{${min},${max}}`;
}

/**
 * A grammar under construction: named rules plus the root expression. Rule names are made
 * unique from a hint, so converters can name rules after what they match.
 */
export class EbnfGrammar {
  private readonly rules = new Map<string, string | null>();
  private chars = 0;

  /** `maxChars`: the grammar text may not grow past it (GrammarTooComplexError naming maxGrammarChars, as soon as it does). */
  constructor(private readonly maxChars = Infinity) {}

  /** Reserves a fresh rule name; define it later with `define` (recursive rules need this). */
  reserve(hint: string): string {
    let base = hint.replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '') || 'rule';
    if (!/^[A-Za-z]/.test(base)) base = `r_${base}`;
    let name = base;
    for (let i = 2; this.rules.has(name) || name === 'root'; i++) name = `${base}_${i}`;
    this.rules.set(name, null);
    return name;
  }

  define(name: string, body: string): string {
    if (this.rules.get(name) !== null) throw new Error(`rule ${name} is not reserved or already defined`);
    this.chars += name.length + body.length + 6;
    if (this.chars > this.maxChars) throw grammarTooLarge(this.maxChars);
    this.rules.set(name, body);
    return name;
  }

  /** A new rule for `body`; returns its name. */
  rule(hint: string, body: string): string {
    return this.define(this.reserve(hint), body);
  }

  /** A rule with a fixed name, defined on first use (shared building blocks). */
  shared(name: string, build: () => string): string {
    if (!this.rules.has(name)) {
      this.rules.set(name, null);
      const body = build();
      this.chars += name.length + body.length + 6;
      if (this.chars > this.maxChars) throw grammarTooLarge(this.maxChars);
      this.rules.set(name, body);
    }
    return name;
  }

  /**
   * `step` repeated between min and max times, then `end`: right-recursive rules, one per
   * count up to max (or up to min, then one looping rule), each ending in its successor.
   *
   * This is the shape XGrammar 0.1.27 masks fast. Measured on a 512-token vocabulary, a
   * JSON string as `"\"" body` with `body ::= "\"" | char body | escape body` costs ~5 µs
   * per token; the same language as `char*` or `(char | escape) body` costs 150–2000 µs,
   * and `(...){0,400}` about 5 ms: a token spanning many characters then crosses a
   * sub-rule boundary at each character, all checked at run time.
   *
   * `step(next)` gives the alternatives of one repetition followed by `next`, as a
   * top-level alternation (distributed, not grouped), for the reason above.
   */
  loop(hint: string, step: (next: string) => string, min: number, max: number, end: string): string {
    if (max === Infinity) {
      const tail = this.reserve(`${hint}_loop`);
      this.define(tail, `${end} | ${step(tail)}`);
      let next = tail;
      for (let k = min - 1; k >= 0; k--) next = this.rule(`${hint}_${k}`, step(next));
      return next;
    }
    let next = end;
    for (let k = max - 1; k >= 0; k--) next = this.rule(`${hint}_${k}`, k >= min ? `${end} | ${step(next)}` : step(next));
    return next;
  }

  /** `expr` as something that can be repeated cheaply in rule bodies: itself if a name or literal, else a new rule. */
  named(hint: string, expr: string): string {
    return /^[A-Za-z_][A-Za-z0-9_]*$/.test(expr) || /^"(?:[^"\\]|\\.)*"$/.test(expr) ? expr : this.rule(hint, expr);
  }

  toString(root: string): string {
    const lines = [`root ::= ${root}`];
    for (const [name, body] of this.rules) {
      if (body === null) throw new Error(`rule ${name} was reserved but never defined`);
      lines.push(`${name} ::= ${body}`);
    }
    return `${lines.join('\n')}\n`;
  }
}
