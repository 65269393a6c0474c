import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENCODE_SLICE_CHARS, HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { seededRandom } from './helpers/random-text.js';

/** The embedded model's tokenizer as the server loads it. */
const dir = new URL('../../models/stories260k/', import.meta.url);
const tokenizer = HfTokenizer.fromJson(
  JSON.parse(readFileSync(new URL('tokenizer.json', dir), 'utf8')),
  JSON.parse(readFileSync(new URL('tokenizer_config.json', dir), 'utf8')),
);

const PIECES = ['Lily', ' ', '  ', '   ', 'went', ' to the park', '.', '\n', '\n\n', '\t', ' <s> ', '</s>', 'é', '日本', '😀', ',', 'x'];

function randomLongText(seed: number, length: number): string {
  const next = seededRandom(seed);
  const parts: string[] = [];
  let size = 0;
  while (size < length) {
    const piece = PIECES[Math.floor(next() * PIECES.length)];
    parts.push(piece);
    size += piece.length;
  }
  return parts.join('');
}

describe('encodeInSlices', () => {
  it('cuts long texts into several slices whose ids are exactly encode()', () => {
    for (const seed of [1, 2, 3]) {
      const text = (seed === 2 ? '  ' : '') + randomLongText(seed, ENCODE_SLICE_CHARS * 5) + (seed === 3 ? ' ' : '');
      for (const addSpecialTokens of [true, false]) {
        const slices = [...tokenizer.encodeInSlices(text, { addSpecialTokens })];
        expect(slices.length).toBeGreaterThan(4);
        expect(slices.flat()).toEqual(tokenizer.encode(text, { addSpecialTokens }));
      }
    }
  });

  it('keeps a text without a place to cut (no space after a non-space) in one piece', () => {
    const text = 'x'.repeat(ENCODE_SLICE_CHARS * 3);
    const slices = [...tokenizer.encodeInSlices(text)];
    expect(slices.flat()).toEqual(tokenizer.encode(text));
    expect(slices.length).toBeLessThanOrEqual(2);
  });
});
