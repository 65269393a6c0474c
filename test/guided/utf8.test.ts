import { describe, expect, it } from 'vitest';
import { utf8ByteRanges } from '../../src/guided/char-set-ebnf.js';
import { UTF8_BOUNDARY, UTF8_INVALID, utf8StepAll } from '../../src/guided/utf8.js';

const bytes = (...list: number[]) => Uint8Array.from(list);
const encode = (text: string) => new TextEncoder().encode(text);

describe('strict UTF-8 validator', () => {
  it('accepts every well-formed character, ending on a boundary', () => {
    for (const text of ['a', '\u0000', '\u007f', '\u0080', 'é', '\u07ff', '\u0800', '€', '\ud7ff', '\ue000', '\uffff', '😀', '\u{10ffff}']) {
      expect(utf8StepAll(UTF8_BOUNDARY, encode(text)), JSON.stringify(text)).toBe(UTF8_BOUNDARY);
    }
  });

  it('agrees with a fatal TextDecoder on malformed sequences', () => {
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const samples = [
      bytes(0xc0, 0x80), // overlong
      bytes(0xc1, 0xbf),
      bytes(0xe0, 0x9f, 0xbf), // overlong 3-byte
      bytes(0xed, 0xa0, 0x80), // surrogate
      bytes(0xed, 0xbf, 0xbf),
      bytes(0xf0, 0x8f, 0xbf, 0xbf), // overlong 4-byte
      bytes(0xf4, 0x90, 0x80, 0x80), // above U+10FFFF
      bytes(0xf5, 0x80, 0x80, 0x80),
      bytes(0xff),
      bytes(0x80),
      bytes(0xc3, 0x41), // lead byte interrupted by ASCII
      bytes(0xe2, 0x82, 0xc3, 0xa9),
    ];
    for (const sample of samples) {
      expect(() => decoder.decode(sample)).toThrow();
      expect(utf8StepAll(UTF8_BOUNDARY, sample), [...sample].map((b) => b.toString(16)).join(' ')).toBe(UTF8_INVALID);
    }
  });

  it('reports an unfinished character as neither valid end nor error', () => {
    const state = utf8StepAll(UTF8_BOUNDARY, bytes(0xf0, 0x9f));
    expect(state).not.toBe(UTF8_BOUNDARY);
    expect(state).not.toBe(UTF8_INVALID);
    expect(utf8StepAll(state, bytes(0x98, 0x80))).toBe(UTF8_BOUNDARY);
  });
});

describe('UTF-8 byte ranges of a code point range', () => {
  it.each([
    [0x80, 0x10ffff],
    [0xe9, 0xff],
    [0x7ff, 0x800],
    [0x2027, 0x202a],
    [0x1f600, 0x1f64f],
    [0xe000, 0x10ffff],
    [0x10000, 0x10000],
  ])('covers exactly [%i, %i]', (lo, hi) => {
    const sequences = utf8ByteRanges(lo, hi);
    const inAnyRange = (encoded: Uint8Array) =>
      sequences.some((seq) => seq.length === encoded.length && seq.every(([a, b], i) => encoded[i] >= a && encoded[i] <= b));
    // Every code point inside is covered; its neighbours outside are not.
    const probes = [lo - 1, lo, lo + 1, (lo + hi) >> 1, hi - 1, hi, hi + 1].filter((c) => c >= 0x80 && c <= 0x10ffff && (c < 0xd800 || c > 0xdfff));
    for (const c of probes) expect(inAnyRange(encode(String.fromCodePoint(c))), c.toString(16)).toBe(c >= lo && c <= hi);
    // And nothing but well-formed UTF-8 fits: the smallest and largest byte strings of each sequence decode.
    for (const seq of sequences) {
      expect(utf8StepAll(UTF8_BOUNDARY, Uint8Array.from(seq.map(([a]) => a)))).toBe(UTF8_BOUNDARY);
      expect(utf8StepAll(UTF8_BOUNDARY, Uint8Array.from(seq.map(([, b]) => b)))).toBe(UTF8_BOUNDARY);
    }
  });
});
