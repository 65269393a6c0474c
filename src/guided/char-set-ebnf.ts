import { ASCII, CharSet, NON_ASCII } from './char-set.js';
import { alt, literal, seq } from './ebnf.js';

/**
 * Character sets as EBNF that XGrammar 0.1.27 matches exactly.
 *
 * Its character classes treat members above U+007F as single bytes: a positive class
 * [\u00c2-\u00df] matches the byte C2..DF, not the characters "Â".."ß" (a one-member class
 * is the exception: it becomes the literal character), and a negated class ignores its
 * non-ASCII members (with a warning). Literal strings are exact. So, for a set:
 * - its ASCII members form an ordinary class;
 * - "every non-ASCII character" is a negated class of the excluded ASCII characters
 *   (it admits malformed UTF-8 too, which the guide's UTF-8 filter removes);
 * - a few other non-ASCII members are listed as literals;
 * - many are spelled as their UTF-8 byte sequences, one byte class per position. A
 *   single byte is written as a two-member class with 0xFF, a byte that never occurs in
 *   UTF-8 (the UTF-8 filter rejects it), so the class stays byte-level.
 * test/guided/regex-guide.test.ts pins this behaviour.
 */
export const NON_ASCII_LITERAL_LIMIT = 32;

function classChar(c: number): string {
  const ch = String.fromCharCode(c);
  return /[A-Za-z0-9]/.test(ch) ? ch : `\\u${c.toString(16).padStart(4, '0')}`;
}

/** A positive or negated class of ASCII code points (escapes have a fixed width: XGrammar reads \x greedily). */
function asciiClass(set: CharSet, negated: boolean): string {
  const body = set.ranges
    .map(([lo, hi]) => (lo === hi ? classChar(lo) : hi === lo + 1 ? classChar(lo) + classChar(hi) : `${classChar(lo)}-${classChar(hi)}`))
    .join('');
  return `[${negated ? '^' : ''}${body}]`;
}

function byteClass(lo: number, hi: number): string {
  return lo === hi ? `[${classChar(lo)}\\u00ff]` : `[${classChar(lo)}-${classChar(hi)}]`;
}

function utf8Encode(codePoint: number): number[] {
  return [...new TextEncoder().encode(String.fromCodePoint(codePoint))];
}

/**
 * The code points [lo, hi] (all non-ASCII, no surrogates) as sequences of byte ranges:
 * the classic construction that splits a range until every byte position varies over a
 * contiguous range independently of the others.
 */
export function utf8ByteRanges(lo: number, hi: number): Array<Array<[number, number]>> {
  const out: Array<Array<[number, number]>> = [];
  const split = (a: number, b: number) => {
    for (const limit of [0x7ff, 0xffff]) {
      if (a <= limit && b > limit) {
        split(a, limit);
        split(limit + 1, b);
        return;
      }
    }
    const length = utf8Encode(a).length;
    for (let i = 1; i < length; i++) {
      const low = (1 << (6 * i)) - 1;
      if ((a & ~low) !== (b & ~low)) {
        if ((a & low) !== 0) {
          split(a, a | low);
          split((a | low) + 1, b);
          return;
        }
        if ((b & low) !== low) {
          split(a, (b & ~low) - 1);
          split(b & ~low, b);
          return;
        }
      }
    }
    const first = utf8Encode(a);
    const last = utf8Encode(b);
    out.push(first.map((byte, k) => [byte, last[k]]));
  };
  split(lo, hi);
  return out;
}

/** One character of `set`, exactly. */
export function charSetEbnf(set: CharSet): string {
  return alt(charSetOptions(set));
}

/** One character of `set` as alternatives (to distribute over what follows, see EbnfGrammar.loop). */
export function charSetOptions(set: CharSet): string[] {
  if (set.isEmpty) throw new Error('charSetEbnf: empty set');
  const ascii = set.intersect(ASCII);
  const nonAscii = set.intersect(NON_ASCII);
  if (nonAscii.size === NON_ASCII.size) {
    const excluded = ASCII.subtract(ascii);
    // A negated class needs at least one member; when nothing is excluded, spell out both halves.
    return excluded.isEmpty ? [asciiClass(ASCII, false), asciiClass(ASCII, true)] : [asciiClass(excluded, true)];
  }
  const options: string[] = [];
  if (!ascii.isEmpty) {
    const single = ascii.single;
    options.push(single !== null ? literal(String.fromCodePoint(single)) : asciiClass(ascii, false));
  }
  if (nonAscii.size <= NON_ASCII_LITERAL_LIMIT) {
    for (const c of nonAscii.members()) options.push(literal(String.fromCodePoint(c)));
  } else {
    for (const [lo, hi] of nonAscii.ranges) {
      for (const sequence of utf8ByteRanges(lo, hi)) options.push(seq(...sequence.map(([a, b]) => byteClass(a, b))));
    }
  }
  return options;
}

const JSON_SHORT_ESCAPES: Record<number, string> = { 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0c: '\\f', 0x0d: '\\r', 0x22: '\\"', 0x5c: '\\\\' };

/** How `codePoint` is written inside a JSON string when it must be escaped. */
export function jsonEscape(codePoint: number): string {
  return JSON_SHORT_ESCAPES[codePoint] ?? `\\u${codePoint.toString(16).padStart(4, '0')}`;
}

/** Characters JSON strings must escape: the quote, the backslash and C0 controls. */
export const JSON_MUST_ESCAPE = CharSet.of(0x22, 0x5c, [0, 0x1f]);

/**
 * One character of `set` as it is written inside a JSON string: members JSON must escape
 * appear as their escape sequence, the others as themselves.
 */
export function jsonStringCharSetOptions(set: CharSet): string[] {
  const plain = set.subtract(JSON_MUST_ESCAPE);
  const options: string[] = [];
  if (!plain.isEmpty) options.push(...charSetOptions(plain));
  for (const c of set.intersect(JSON_MUST_ESCAPE).members()) options.push(literal(jsonEscape(c)));
  if (options.length === 0) throw new Error('jsonStringCharSetOptions: empty set');
  return options;
}
