/**
 * A lower bound on how many tokens a text can become, from its length alone, so a prompt
 * that cannot fit the context is refused before any tokenizer runs (tokenizing 4 M
 * characters of one word took 12–17 s and 1.9 GB).
 *
 * Every token stands for at most L units of the text the model sees, where L is the
 * longest token's length: characters for a sentencepiece-style vocabulary ("▁" is one
 * space), bytes for a byte-level one (each character of its alphabet is one byte); a
 * byte-fallback token ("<0xE4>") stands for one byte, so at most one character. Added
 * tokens are matched in the text itself and count with their content's length. So a text
 * of U units has at least ceil(U / L) tokens, provided nothing before the model makes the
 * text shorter:
 * - normalizers that keep or lengthen it (Prepend, Replace of a string by one at least as
 *   long, Lowercase, NFD, NFKD) are fine; NFC and NFKC compose at most 4 code points into
 *   one (the longest canonical decomposition is 4), so they divide the bound by 4; any
 *   other normalizer (Strip, StripAccents, Precompiled, regex replacements) gives no bound;
 * - pre-tokenizers must keep every character (ByteLevel, Metaspace, Digits, Split and
 *   Punctuation unless they remove what they match); whitespace splitters give no bound;
 * - the model must not fold a run of unknown characters into one token: BPE with
 *   byte_fallback or without fuse_unk, Unigram with byte_fallback; WordPiece gives none.
 * A tokenizer outside these rules has no bound (null), and is tokenized as before.
 */

export interface TokenLowerBound {
  /** What the text is measured in: UTF-8 bytes (a byte-level vocabulary, no shrinking normalizer) or code points. */
  unit: 'bytes' | 'chars';
  /** Units one token stands for at most, times how much normalizing may shrink the text. */
  unitsPerToken: number;
  /**
   * Words (runs of characters other than U+0020) are separate pieces, each at least one
   * token: the pre-tokenizer always cuts at a space after a non-space (sentencepiece's word
   * split, a GPT-2-style regex isolating its matches), no added token holds a space, and the
   * model drops no character (byte-level, byte fallback, or an unknown token). Then a text
   * has at least as many tokens as words, whatever the vocabulary's longest token.
   */
  words: boolean;
}

type Json = Record<string, unknown>;

const BYTE_FALLBACK_TOKEN = /^<0x[0-9A-Fa-f]{2}>$/;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** How much a normalizer may shrink a text (1: never), or null when it may shrink it without bound. */
function normalizerShrink(normalizer: unknown): number | null {
  if (normalizer === null || normalizer === undefined) return 1;
  if (!isRecord(normalizer)) return null;
  switch (normalizer.type) {
    case 'Sequence': {
      if (!Array.isArray(normalizer.normalizers)) return null;
      let shrink = 1;
      for (const inner of normalizer.normalizers) {
        const factor = normalizerShrink(inner);
        if (factor === null) return null;
        shrink *= factor;
      }
      return shrink;
    }
    case 'Prepend':
    case 'Lowercase':
    case 'NFD':
    case 'NFKD':
      return 1;
    case 'NFC':
    case 'NFKC':
      return 4;
    case 'Replace': {
      const pattern = isRecord(normalizer.pattern) ? normalizer.pattern.String : undefined;
      const content = normalizer.content;
      if (typeof pattern !== 'string' || typeof content !== 'string' || pattern === '') return null;
      const from = [...pattern].length;
      const to = [...content].length;
      if (to === 0) return null;
      return to >= from ? 1 : from / to;
    }
    default:
      return null;
  }
}

/** Whether a pre-tokenizer keeps every character of the text (and whether it is byte-level). */
function preTokenizerKeeps(preTokenizer: unknown): { keeps: boolean; byteLevel: boolean } {
  if (preTokenizer === null || preTokenizer === undefined) return { keeps: true, byteLevel: false };
  if (!isRecord(preTokenizer)) return { keeps: false, byteLevel: false };
  switch (preTokenizer.type) {
    case 'Sequence': {
      if (!Array.isArray(preTokenizer.pretokenizers)) return { keeps: false, byteLevel: false };
      let byteLevel = false;
      for (const inner of preTokenizer.pretokenizers) {
        const each = preTokenizerKeeps(inner);
        if (!each.keeps) return { keeps: false, byteLevel: false };
        byteLevel ||= each.byteLevel;
      }
      return { keeps: true, byteLevel };
    }
    case 'ByteLevel':
      return { keeps: true, byteLevel: true };
    case 'Metaspace':
    case 'Digits':
    case 'UnicodeScripts':
      return { keeps: true, byteLevel: false };
    case 'Split':
    case 'Punctuation':
      return { keeps: preTokenizer.behavior !== 'Removed', byteLevel: false };
    default:
      return { keeps: false, byteLevel: false };
  }
}

/** Whether the model may fold many characters into one unknown token. */
function foldsUnknowns(model: Json): boolean {
  if (model.byte_fallback === true) return false;
  if (model.type === 'BPE') return model.fuse_unk === true && model.unk_token !== null && model.unk_token !== undefined;
  return true;
}

function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** Length in Unicode code points (protocol/fields.ts' codePointLength, which the specs call characters). */
export function codePoints(text: string): number {
  let pairs = 0;
  for (let i = 0; i < text.length - 1; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        pairs++;
        i++;
      }
    }
  }
  return text.length - pairs;
}

/** A GPT-2-style regex split whose matches stay pieces of their own (Isolated): a space after a non-space starts a new match. */
function isolatesGpt2Matches(preTokenizer: Json): boolean {
  if (preTokenizer.type === 'ByteLevel') return preTokenizer.use_regex !== false;
  if (preTokenizer.type !== 'Split' || preTokenizer.invert === true || preTokenizer.behavior !== 'Isolated') return false;
  const pattern = isRecord(preTokenizer.pattern) ? preTokenizer.pattern.Regex : undefined;
  return typeof pattern === 'string' && pattern.includes('\\s+(?!\\S)');
}

/** The String patterns a normalizer's Replace steps rewrite, with what they write (Regex patterns give no bound at all). */
function replacements(normalizer: unknown): Array<{ pattern: string; content: unknown }> {
  if (!isRecord(normalizer)) return [];
  if (normalizer.type === 'Sequence' && Array.isArray(normalizer.normalizers)) return normalizer.normalizers.flatMap(replacements);
  const pattern = isRecord(normalizer.pattern) ? normalizer.pattern.String : undefined;
  return normalizer.type === 'Replace' && typeof pattern === 'string' ? [{ pattern, content: normalizer.content }] : [];
}

/**
 * Whether the pre-tokenizer always cuts between two words (see TokenLowerBound.words), the
 * spaces still there when it runs; `wordSplit`: MetaspaceWordSplitter stands in for it.
 */
function splitsBetweenWords(tokenizerJson: Json, wordSplit: boolean): boolean {
  const preTokenizer = tokenizerJson.pre_tokenizer;
  const metaspace = wordSplit || (isRecord(preTokenizer) && preTokenizer.type === 'Metaspace' && preTokenizer.split !== false);
  // A normalizer that rewrites spaces leaves a GPT-2 regex nothing to cut at; sentencepiece's "▁" is what Metaspace cuts before.
  const rewritesSpaces = replacements(tokenizerJson.normalizer).some(({ pattern, content }) => pattern.includes(' ') && !(metaspace && pattern === ' ' && content === '\u2581'));
  if (rewritesSpaces) return false;
  if (metaspace) return true;
  if (!isRecord(preTokenizer)) return false;
  // Later members of a sequence only cut further.
  if (preTokenizer.type === 'Sequence' && Array.isArray(preTokenizer.pretokenizers)) {
    return preTokenizer.pretokenizers.some((inner) => isRecord(inner) && (isolatesGpt2Matches(inner) || (inner.type === 'Metaspace' && inner.split !== false)));
  }
  return isolatesGpt2Matches(preTokenizer);
}

/** Whether the model turns every character into some token (none dropped for want of a vocabulary entry). */
function keepsEveryCharacter(model: Json, byteLevel: boolean): boolean {
  if (byteLevel || model.byte_fallback === true) return true;
  if (model.type === 'Unigram') return typeof model.unk_id === 'number';
  return typeof model.unk_token === 'string';
}

/**
 * The bound's parameters for a tokenizer.json, or null when no sound bound is known.
 * `wordSplit`: the runtime splits before every word-initial "▁" itself (MetaspaceWordSplitter
 * in place of a missing pre-tokenizer).
 */
export function tokenLowerBoundOf(tokenizerJson: Json, wordSplit = false): TokenLowerBound | null {
  const model = tokenizerJson.model;
  if (!isRecord(model) || (model.type !== 'BPE' && model.type !== 'Unigram')) return null;
  if (foldsUnknowns(model)) return null;
  if (tokenizerJson.truncation !== null && tokenizerJson.truncation !== undefined) return null;
  const shrink = normalizerShrink(tokenizerJson.normalizer);
  if (shrink === null) return null;
  const { keeps, byteLevel } = preTokenizerKeeps(tokenizerJson.pre_tokenizer);
  if (!keeps) return null;
  const unit = byteLevel && shrink === 1 ? 'bytes' : 'chars';

  const byteFallback = model.byte_fallback === true;
  let longest = 1;
  const consider = (token: string) => {
    // A byte-level token's characters are bytes; otherwise one character is at most one unit here.
    const length = byteFallback && BYTE_FALLBACK_TOKEN.test(token) ? 1 : codePoints(token);
    if (length > longest) longest = length;
  };
  if (model.type === 'BPE' && isRecord(model.vocab)) for (const token of Object.keys(model.vocab)) consider(token);
  else if (model.type === 'Unigram' && Array.isArray(model.vocab)) {
    for (const entry of model.vocab) if (Array.isArray(entry) && typeof entry[0] === 'string') consider(entry[0]);
  } else return null;
  if (Array.isArray(tokenizerJson.added_tokens)) {
    for (const added of tokenizerJson.added_tokens) {
      if (!isRecord(added) || typeof added.content !== 'string') continue;
      // Added tokens are matched in the text as written: their content's length in the text's units.
      const length = unit === 'bytes' ? utf8Length(added.content) : codePoints(added.content);
      if (length > longest) longest = length;
    }
  }
  const addedHoldSpaces =
    Array.isArray(tokenizerJson.added_tokens) && tokenizerJson.added_tokens.some((added) => isRecord(added) && typeof added.content === 'string' && added.content.includes(' '));
  const words = !addedHoldSpaces && keepsEveryCharacter(model, byteLevel) && splitsBetweenWords(tokenizerJson, wordSplit);
  return { unit, unitsPerToken: longest * shrink, words };
}

/** Runs of characters other than U+0020 in `text`, counted up to just past `enough`. */
function wordCount(text: string, enough: number): number {
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const space = text.charCodeAt(i) === 0x20;
    if (!space && !inWord && ++words > enough) return words;
    inWord = !space;
  }
  return words;
}

/**
 * The fewest tokens `text` can become under `bound` (0 without one), no tokenizer. Past
 * `enough` the answer may be any bound above it: the UTF-16 length gives one at once (a
 * code unit is at most one code point and at least one UTF-8 byte; a code point at most
 * two units), and only a text near `enough` is counted exactly.
 *
 * From the length alone, it also bounds the work of tokenizing the text as one piece; with
 * `words` (where the bound allows), the text's words count too (at least one token each),
 * which bounds how many tokens, not how much work: 4 MB of prose is ~800 K words.
 */
export function minTokenCount(bound: TokenLowerBound | null, text: string, enough = Infinity, options: { words?: boolean } = {}): number {
  if (bound === null) return 0;
  const quick = Math.ceil((bound.unit === 'bytes' ? text.length : Math.ceil(text.length / 2)) / bound.unitsPerToken);
  if (quick > enough) return quick;
  const units = bound.unit === 'bytes' ? utf8Length(text) : codePoints(text);
  const byLength = Math.ceil(units / bound.unitsPerToken);
  if (!options.words || !bound.words || byLength > enough) return byLength;
  return Math.max(byLength, wordCount(text, enough));
}
