/**
 * Scalar coercion as pydantic's lax mode does it, which vLLM's OpenAI server inherits: a
 * number may come as a numeric string ("3", "0.5"), a boolean as "true"/"false" (and
 * pydantic's other spellings) or as 0/1. Clients send proper JSON types; the leniency is
 * for hand-written requests (curl, forms) that work against vLLM. Anything else is left
 * as is for the strict schema to refuse with its usual message. Strings are not made
 * from numbers (pydantic does not either). A numeric string longer than the longest number
 * literal the body parser reads stays a string (and is refused as one): converting it would
 * cost what a giant literal costs.
 */
import { z } from 'zod';
import { bool, floatIn, intIn, type NumberRange } from './fields.js';
import { MAX_NUMBER_LITERAL_CHARS } from './json.js';

const NUMERIC = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;
const TRUE = new Set(['1', 'on', 't', 'true', 'y', 'yes']);
const FALSE = new Set(['0', 'off', 'f', 'false', 'n', 'no']);

/** Whether a string is short enough to be read as a number. */
export function numericLength(input: string): boolean {
  return input.length <= MAX_NUMBER_LITERAL_CHARS;
}

export function laxNumber(input: unknown): unknown {
  return typeof input === 'string' && numericLength(input) && NUMERIC.test(input) ? Number(input) : input;
}

export function laxBoolean(input: unknown): unknown {
  if (typeof input === 'string') {
    const word = input.trim().toLowerCase();
    if (TRUE.has(word)) return true;
    if (FALSE.has(word)) return false;
  }
  if (input === 0 || input === 1) return input === 1;
  return input;
}

export function laxIntIn(range: NumberRange = {}) {
  return z.preprocess(laxNumber, intIn(range));
}

export function laxFloatIn(range: NumberRange = {}) {
  return z.preprocess(laxNumber, floatIn(range));
}

export const laxBool = z.preprocess(laxBoolean, bool);
