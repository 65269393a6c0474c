/** Seeded random strings that stress the tokenizer: merges, whitespace, byte fallback. */

import { seededRandom } from '../../../scripts/seeded-random.js';

export { seededRandom };

const ASCII_PRINTABLE = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i));
const WHITESPACE = [' ', ' ', '  ', '\n', '\t', '\r\n', '\u00a0', '\u200a', '\u3000'];
const UNICODE = ['é', 'ñ', 'â', '€', '™', '“', '”', '’', '—', '…', 'ß', 'Ω', 'ж', '日', '本', '語', '한', '😀', '🐶', '🇯🇵', '👩‍👩‍👧', '\u0301', '\ufffd', '\u{10ffff}'];

/** Characters that can appear in random text; the special-token names are filtered out later. */
function randomChunk(next: () => number, vocabPieces: readonly string[]): string {
  const kind = next();
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)];
  if (kind < 0.4) return pick(vocabPieces);
  if (kind < 0.65) return pick(ASCII_PRINTABLE);
  if (kind < 0.8) return pick(WHITESPACE);
  if (kind < 0.95) return pick(UNICODE);
  // Any code point outside the surrogate range.
  const codePoint = Math.floor(next() * 0x10ffff);
  return codePoint >= 0xd800 && codePoint <= 0xdfff ? 'x' : String.fromCodePoint(codePoint);
}

const SPECIAL_TOKEN_NAMES = /<s>|<\/s>|<unk>/;

/**
 * Random strings built from vocab pieces (so many merges fire), ASCII, whitespace runs and
 * non-vocab characters. Never contains "<s>", "</s>" or "<unk>": those are special tokens
 * to the HF tokenizer but plain text to llama2.c.
 */
export function randomTexts(count: number, seed: number, vocabPieces: readonly string[], maxChunks = 24): string[] {
  const next = seededRandom(seed);
  const texts: string[] = [];
  while (texts.length < count) {
    const chunks = Math.floor(next() * maxChunks);
    let text = '';
    for (let i = 0; i < chunks; i++) text += randomChunk(next, vocabPieces);
    if (!SPECIAL_TOKEN_NAMES.test(text)) texts.push(text);
  }
  return texts;
}
