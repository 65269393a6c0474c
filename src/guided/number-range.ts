import { alt, literal, seq } from './ebnf.js';
import { nonNegativeRange } from './integer-range.js';

/**
 * EBNF for decimal numbers between integer bounds, written without exponent.
 *
 * Digits are limited so that every generated value parses in JavaScript to a double on the
 * right side of the bounds: at most MAX_BOUNDED_INTEGER_DIGITS integer digits and
 * MAX_BOUNDED_FRACTION_DIGITS fraction digits (a fraction of 1e-6 is still far larger than
 * the spacing of doubles below 1e9, so "4.999999" can never round up to 5).
 */
export const MAX_BOUNDED_INTEGER_DIGITS = 9;
export const MAX_BOUNDED_FRACTION_DIGITS = 6;
const CAP = 10 ** MAX_BOUNDED_INTEGER_DIGITS - 1;

export interface NumberBounds {
  /** Lower bound (an integer) or null. */
  min: number | null;
  max: number | null;
  exclusiveMin: boolean;
  exclusiveMax: boolean;
}

const ANY_FRACTION = `("." [0-9]{1,${MAX_BOUNDED_FRACTION_DIGITS}})?`;
const ZERO_FRACTION = `("." "0"{1,${MAX_BOUNDED_FRACTION_DIGITS}})?`;
/** A fraction with at least one non-zero digit, as alternatives by the first such digit. */
const NONZERO_FRACTION = `"." ${alt(
  Array.from({ length: MAX_BOUNDED_FRACTION_DIGITS }, (_, zeros) => {
    const left = MAX_BOUNDED_FRACTION_DIGITS - zeros - 1;
    return seq(zeros > 0 ? `"0"{${zeros}}` : '', '[1-9]', left > 0 ? `[0-9]{0,${left}}` : '');
  }),
)}`;

/**
 * Values v = n.f ≥ 0 (n the integer part, f the fraction) with lo ≤ v ≤ hi (or < when
 * exclusive); null bounds are open. Returns the alternatives, possibly none.
 */
function nonNegativeSide(lo: number | null, loExclusive: boolean, hi: number | null, hiExclusive: boolean): string[] {
  if (hi !== null && hi > CAP) hi = null;
  if (lo !== null && lo > CAP) return [];
  const options: string[] = [];
  // Integer parts strictly inside the bounds take any fraction; so does n = lo when inclusive.
  const anyFrom = lo === null || lo < 0 ? 0 : loExclusive ? lo + 1 : lo;
  const anyTo = hi === null ? CAP : hi - 1;
  if (anyFrom <= anyTo) options.push(seq(nonNegativeRange(anyFrom, anyTo), ANY_FRACTION));
  // n = lo, exclusive: only a fraction above zero gets past the bound.
  if (lo !== null && lo >= 0 && loExclusive && (hi === null || lo < hi)) options.push(seq(literal(String(lo)), NONZERO_FRACTION));
  // n = hi, inclusive: only hi itself, possibly written with zeros after the point.
  if (hi !== null && hi >= 0 && !hiExclusive && (lo === null || hi > lo || (hi === lo && !loExclusive))) {
    options.push(seq(literal(String(hi)), ZERO_FRACTION));
  }
  return options;
}

/** The alternatives for numbers within `bounds`; empty when no value can be written. */
export function boundedNumberOptions(bounds: NumberBounds): string[] {
  const { min, max, exclusiveMin, exclusiveMax } = bounds;
  for (const bound of [min, max]) {
    if (bound !== null && !Number.isSafeInteger(bound)) throw new RangeError(`boundedNumberOptions: ${bound} is not an integer`);
  }
  const positive = nonNegativeSide(min, exclusiveMin, max, exclusiveMax);
  // v = -(m.f): min ≤ v ≤ max  ⇔  -max ≤ m.f ≤ -min.
  const negative = nonNegativeSide(max === null ? null : -max, exclusiveMax, min === null ? null : -min, exclusiveMin);
  return [...positive, ...negative.map((expr) => seq('"-"', expr))];
}
