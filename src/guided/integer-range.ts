import { alt, literal, repeat, seq } from './ebnf.js';

/**
 * EBNF for the decimal integers in [lo, hi], written as JSON writes them (no leading
 * zeros, "-" before negatives). The classic digit-by-digit construction: split by number
 * of digits, then by leading digit, so every alternative is a run of digit classes.
 */
export function integerRangeEbnf(lo: number, hi: number): string {
  if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || lo > hi) {
    throw new RangeError(`integerRangeEbnf: bad range [${lo}, ${hi}]`);
  }
  const options: string[] = [];
  if (lo < 0) options.push(seq('"-"', nonNegativeRange(Math.max(1, -hi), -lo)));
  if (hi >= 0) options.push(nonNegativeRange(Math.max(0, lo), hi));
  return alt(options);
}

/** Integers in [lo, hi], both ≥ 0, without sign. */
export function nonNegativeRange(lo: number, hi: number): string {
  const options: string[] = [];
  for (let digits = String(lo).length; digits <= String(hi).length; digits++) {
    const low = Math.max(lo, digits === 1 ? 0 : 10 ** (digits - 1));
    const high = Math.min(hi, 10 ** digits - 1);
    if (low <= high) options.push(...sameLength(String(low), String(high)));
  }
  return alt(options);
}

function digitClass(from: number, to: number): string {
  return from === to ? literal(String(from)) : `[${from}-${to}]`;
}

function anyDigits(count: number): string {
  return repeat('[0-9]', count, count);
}

/** Alternatives matching the digit strings in [low, high], both of the same length. */
function sameLength(low: string, high: string): string[] {
  if (low === high) return [literal(low)];
  const first = Number(low[0]);
  const last = Number(high[0]);
  const restLow = low.slice(1);
  const restHigh = high.slice(1);
  const rest = restLow.length;
  if (rest === 0) return [digitClass(first, last)];
  if (first === last) return [seq(literal(low[0]), alt(sameLength(restLow, restHigh)))];
  const lowIsFloor = /^0*$/.test(restLow);
  const highIsCeiling = /^9*$/.test(restHigh);
  const out: string[] = [];
  // Leading digit `first`: the rest runs from restLow up to 99…9 (unless that is everything).
  if (!lowIsFloor) out.push(seq(literal(low[0]), alt(sameLength(restLow, '9'.repeat(rest)))));
  const middleFrom = lowIsFloor ? first : first + 1;
  const middleTo = highIsCeiling ? last : last - 1;
  if (middleFrom <= middleTo) out.push(seq(digitClass(middleFrom, middleTo), anyDigits(rest)));
  // Leading digit `last`: the rest runs from 00…0 up to restHigh.
  if (!highIsCeiling) out.push(seq(literal(high[0]), alt(sameLength('0'.repeat(rest), restHigh))));
  return out;
}
