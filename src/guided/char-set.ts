/**
 * A set of Unicode scalar values as sorted, disjoint, non-adjacent inclusive ranges.
 * Surrogates (U+D800..U+DFFF) are never members: they cannot be written in UTF-8, so no
 * model output can contain them.
 */
export type CodePointRange = readonly [number, number];

export const MAX_CODE_POINT = 0x10ffff;
const SURROGATES: CodePointRange = [0xd800, 0xdfff];

export class CharSet {
  private constructor(readonly ranges: readonly CodePointRange[]) {}

  static readonly EMPTY = new CharSet([]);

  static of(...ranges: ReadonlyArray<CodePointRange | number>): CharSet {
    return CharSet.fromRanges(ranges.map((r) => (typeof r === 'number' ? ([r, r] as const) : r)));
  }

  static fromRanges(input: Iterable<CodePointRange>): CharSet {
    const sorted = [...input].filter(([lo, hi]) => lo <= hi).sort((a, b) => a[0] - b[0]);
    const merged: Array<[number, number]> = [];
    for (const [lo, hi] of sorted) {
      const last = merged[merged.length - 1];
      if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
      else merged.push([lo, hi]);
    }
    return new CharSet(removeSurrogates(merged));
  }

  static fromString(chars: string): CharSet {
    return CharSet.fromRanges([...chars].map((c) => [c.codePointAt(0)!, c.codePointAt(0)!] as const));
  }

  get isEmpty(): boolean {
    return this.ranges.length === 0;
  }

  get size(): number {
    return this.ranges.reduce((n, [lo, hi]) => n + hi - lo + 1, 0);
  }

  /** The only member, or null when the set has zero or several. */
  get single(): number | null {
    return this.ranges.length === 1 && this.ranges[0][0] === this.ranges[0][1] ? this.ranges[0][0] : null;
  }

  has(codePoint: number): boolean {
    return this.ranges.some(([lo, hi]) => codePoint >= lo && codePoint <= hi);
  }

  union(other: CharSet): CharSet {
    return CharSet.fromRanges([...this.ranges, ...other.ranges]);
  }

  complement(): CharSet {
    const out: Array<[number, number]> = [];
    let next = 0;
    for (const [lo, hi] of this.ranges) {
      if (lo > next) out.push([next, lo - 1]);
      next = hi + 1;
    }
    if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
    return CharSet.fromRanges(out);
  }

  intersect(other: CharSet): CharSet {
    return this.complement().union(other.complement()).complement();
  }

  subtract(other: CharSet): CharSet {
    return this.intersect(other.complement());
  }

  /** Members in increasing order, at most `limit` of them. */
  members(limit = Infinity): number[] {
    const out: number[] = [];
    for (const [lo, hi] of this.ranges) {
      for (let c = lo; c <= hi && out.length < limit; c++) out.push(c);
      if (out.length >= limit) break;
    }
    return out;
  }
}

function removeSurrogates(ranges: Array<[number, number]>): CodePointRange[] {
  const out: CodePointRange[] = [];
  for (const [lo, hi] of ranges) {
    if (hi < SURROGATES[0] || lo > SURROGATES[1]) out.push([lo, hi]);
    else {
      if (lo < SURROGATES[0]) out.push([lo, SURROGATES[0] - 1]);
      if (hi > SURROGATES[1]) out.push([SURROGATES[1] + 1, hi]);
    }
  }
  return out;
}

export const ASCII = CharSet.of([0, 0x7f]);
export const NON_ASCII = CharSet.of([0x80, MAX_CODE_POINT]);
export const ANY_CHAR = CharSet.of([0, MAX_CODE_POINT]);

/** ECMAScript's \d, \w, \s and the line terminators `.` excludes. */
export const DIGIT = CharSet.of([0x30, 0x39]);
export const WORD = CharSet.of([0x30, 0x39], [0x41, 0x5a], 0x5f, [0x61, 0x7a]);
export const SPACE = CharSet.of(
  [0x09, 0x0d],
  0x20,
  0xa0,
  0x1680,
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  0x202f,
  0x205f,
  0x3000,
  0xfeff,
);
export const LINE_TERMINATORS = CharSet.of(0x0a, 0x0d, 0x2028, 0x2029);
