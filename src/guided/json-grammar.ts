import { ANY_CHAR, CharSet } from './char-set.js';
import { charSetEbnf, charSetOptions, JSON_MUST_ESCAPE } from './char-set-ebnf.js';
import type { EbnfGrammar } from './ebnf.js';

/**
 * Shared rules for compact JSON text (no whitespace anywhere, "," and ":" as separators):
 * the model can never spend tokens on layout or loop on spaces.
 *
 * Numbers are kept finite and exact once parsed by JavaScript: at most 15 integer digits
 * (below 2^53) and a two-digit exponent.
 *
 * Strings are right-recursive with the closing quote inside the recursion (see
 * EbnfGrammar.loop for why that shape matters to XGrammar).
 */
export const MAX_INTEGER_DIGITS = 15;
export const MAX_EXPONENT_DIGITS = 2;

/** Characters a JSON string may contain unescaped. */
export const JSON_PLAIN_CHARS = ANY_CHAR.subtract(JSON_MUST_ESCAPE);

const HEX = '[0-9a-fA-F]';

/**
 * One character inside a JSON string, as alternatives: a plain character, or an escape
 * sequence. \uXXXX is limited to non-surrogates, so each escape is exactly one character,
 * as JSON Schema's minLength/maxLength count them.
 */
export function jsonStringCharOptions(g: EbnfGrammar): string[] {
  // One shared rule for what follows a backslash keeps long string grammars small.
  const escape = g.shared('json_escape', () => {
    const short = charSetEbnf(CharSet.fromString('"\\/bfnrt'));
    return `${short} | "u" ([0-9a-cA-Ce-fE-F] ${HEX} ${HEX} ${HEX} | [dD] [0-7] ${HEX} ${HEX})`;
  });
  return [...charSetOptions(JSON_PLAIN_CHARS), `"\\\\" ${escape}`];
}

/** The characters of a JSON string and its closing quote, between min and max characters. */
export function jsonStringBody(g: EbnfGrammar, min: number, max: number): string {
  const options = jsonStringCharOptions(g);
  const name = `json_string_body${min === 0 && max === Infinity ? '' : `_${min}_${max === Infinity ? 'inf' : max}`}`;
  return g.shared(name, () => {
    const step = (next: string) => options.map((o) => `${o} ${next}`).join(' | ');
    if (min === 0 && max === Infinity) return `"\\"" | ${step(name)}`;
    return g.loop(name, step, min, max, '"\\""');
  });
}

export function jsonStringRule(g: EbnfGrammar): string {
  return g.shared('json_string', () => `"\\"" ${jsonStringBody(g, 0, Infinity)}`);
}

/** Integer digits without sign: 0, or up to MAX_INTEGER_DIGITS digits without a leading zero. */
export function unsignedIntegerExpr(): string {
  return `("0" | [1-9] [0-9]{0,${MAX_INTEGER_DIGITS - 1}})`;
}

export function jsonIntegerRule(g: EbnfGrammar): string {
  return g.shared('json_integer', () => `"-"? ${unsignedIntegerExpr()}`);
}

export function jsonNumberRule(g: EbnfGrammar): string {
  return g.shared('json_number', () => `"-"? ${unsignedIntegerExpr()} ("." [0-9]+)? ([eE] [+-]? [0-9]{1,${MAX_EXPONENT_DIGITS}})?`);
}

export function jsonValueRule(g: EbnfGrammar): string {
  return g.shared('json_value', () =>
    [jsonObjectRule(g), jsonArrayRule(g), jsonStringRule(g), jsonNumberRule(g), '"true"', '"false"', '"null"'].join(' | '),
  );
}

export function jsonObjectRule(g: EbnfGrammar): string {
  return g.shared('json_object', () => {
    const member = `${jsonStringRule(g)} ":" ${jsonValueRule(g)}`;
    const rest = g.shared('json_object_rest', () => `"}" | "," ${member} json_object_rest`);
    return `"{" ("}" | ${member} ${rest})`;
  });
}

export function jsonArrayRule(g: EbnfGrammar): string {
  return g.shared('json_array', () => {
    const value = jsonValueRule(g);
    const rest = g.shared('json_array_rest', () => `"]" | "," ${value} json_array_rest`);
    return `"[" ("]" | ${value} ${rest})`;
  });
}
