/**
 * How long a piece of a text the BPE model may be handed in one call, from the text alone
 * (no regex over it): what decides whether tokenizing it can hold the event loop (BPE on a
 * piece costs 10–100 µs a character when it is one long word, against ~1 µs a character of
 * prose, whose words repeat and are cached).
 *
 * - `spaces`: the pre-tokenizer cuts before every space that follows a non-space
 *   (sentencepiece's word split, MetaspaceWordSplitter or Metaspace with split): a piece is
 *   a word with the spaces before it.
 * - `whitespace`: a GPT-2-style regex (ByteLevel's own, or a Split whose pattern has the
 *   family's `\s+(?!\S)`): letters, digits and punctuation runs stop at whitespace, but
 *   punctuation may take the newlines after it and a whitespace run the spaces before the
 *   next word, so a piece lies within two adjacent stretches between whitespace-after-non-
 *   whitespace points.
 * - `none`: anything else is taken as one piece, the whole text.
 */
export type PieceBreaks = 'spaces' | 'whitespace' | 'none';

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function splitsLikeGpt2(preTokenizer: Json): boolean {
  if (preTokenizer.type === 'ByteLevel') return preTokenizer.use_regex !== false;
  if (preTokenizer.type !== 'Split' || preTokenizer.invert === true) return false;
  const pattern = isRecord(preTokenizer.pattern) ? preTokenizer.pattern.Regex : undefined;
  return typeof pattern === 'string' && pattern.includes('\\s+(?!\\S)');
}

/** The tokenizer's breaks; `wordSplit`: our MetaspaceWordSplitter replaced a missing pre-tokenizer. */
export function pieceBreaksOf(tokenizerJson: Json, wordSplit: boolean): PieceBreaks {
  if (wordSplit) return 'spaces';
  const preTokenizer = tokenizerJson.pre_tokenizer;
  if (!isRecord(preTokenizer)) return 'none';
  if (preTokenizer.type === 'Metaspace') return preTokenizer.split === false ? 'none' : 'spaces';
  if (preTokenizer.type === 'Sequence' && Array.isArray(preTokenizer.pretokenizers)) {
    // A sequence cuts at least where its first GPT-2-style splitter does (later ones only cut further).
    return preTokenizer.pretokenizers.some((inner) => isRecord(inner) && splitsLikeGpt2(inner)) ? 'whitespace' : 'none';
  }
  return splitsLikeGpt2(preTokenizer) ? 'whitespace' : 'none';
}

/** Unicode White_Space, as \s sees it. */
function isWhitespace(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0x85) return false;
  return (
    code === 0x85 || code === 0xa0 || code === 0x1680 || (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 || code === 0x2029 || code === 0x202f || code === 0x205f || code === 0x3000 || code === 0xfeff
  );
}

/** An upper bound on the longest piece (in UTF-16 units) `breaks` leaves of `text`. */
export function longestPieceBound(text: string, breaks: PieceBreaks): number {
  if (breaks === 'none') return text.length;
  const isBreak = breaks === 'spaces' ? (code: number) => code === 0x20 : isWhitespace;
  const stretches = breaks === 'spaces' ? 1 : 2;
  let longest = 0;
  let previous = 0;
  let start = 0;
  let lastWasBreak = true;
  for (let i = 0; i < text.length; i++) {
    const isBreakChar = isBreak(text.charCodeAt(i));
    if (isBreakChar && !lastWasBreak) {
      const stretch = i - start;
      longest = Math.max(longest, stretches === 2 ? stretch + previous : stretch);
      previous = stretch;
      start = i;
    }
    lastWasBreak = isBreakChar;
  }
  const stretch = text.length - start;
  return Math.max(longest, stretches === 2 ? stretch + previous : stretch);
}
