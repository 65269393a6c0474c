/**
 * A strict UTF-8 validator over a byte stream, one byte at a time: it rejects overlong
 * forms, surrogates, code points above U+10FFFF, stray continuation bytes and a new
 * character starting before the previous one is complete.
 *
 * State 0 is a character boundary. Any other state packs what the next byte must be:
 * continuation bytes still expected (bits 16+) and the allowed range of the next byte
 * (low byte in bits 8..15, high byte in bits 0..7).
 */
export const UTF8_BOUNDARY = 0;
export const UTF8_INVALID = -1;

function expect(remaining: number, lo: number, hi: number): number {
  return (remaining << 16) | (lo << 8) | hi;
}

/** The state after `byte`, or UTF8_INVALID. */
export function utf8Step(state: number, byte: number): number {
  if (state === UTF8_INVALID) return UTF8_INVALID;
  if (state === UTF8_BOUNDARY) {
    if (byte < 0x80) return UTF8_BOUNDARY;
    if (byte >= 0xc2 && byte <= 0xdf) return expect(1, 0x80, 0xbf);
    if (byte === 0xe0) return expect(2, 0xa0, 0xbf); // no overlong 3-byte forms
    if (byte === 0xed) return expect(2, 0x80, 0x9f); // no surrogates
    if (byte >= 0xe1 && byte <= 0xef) return expect(2, 0x80, 0xbf);
    if (byte === 0xf0) return expect(3, 0x90, 0xbf); // no overlong 4-byte forms
    if (byte === 0xf4) return expect(3, 0x80, 0x8f); // nothing above U+10FFFF
    if (byte >= 0xf1 && byte <= 0xf3) return expect(3, 0x80, 0xbf);
    return UTF8_INVALID; // continuation byte, C0, C1, F5..FF
  }
  const remaining = state >>> 16;
  const lo = (state >>> 8) & 0xff;
  const hi = state & 0xff;
  if (byte < lo || byte > hi) return UTF8_INVALID;
  return remaining === 1 ? UTF8_BOUNDARY : expect(remaining - 1, 0x80, 0xbf);
}

export function utf8StepAll(state: number, bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length && state !== UTF8_INVALID; i++) state = utf8Step(state, bytes[i]);
  return state;
}
