import type { Tokenizer } from '../tokenizer/types.js';

/**
 * The model vocabulary as XGrammar and the UTF-8 filter need it: each token's raw string
 * for XGrammar's TokenizerInfo, and each token's bytes as they appear in the output.
 */
export type VocabType = 'byte_fallback' | 'byte_level' | 'raw';

export interface TokenVocabulary {
  /** Length of a logits row: ids at or above the tokenizer's vocabulary are never allowed. */
  readonly size: number;
  readonly type: VocabType;
  /** Token strings by id for XGrammar; special tokens are empty strings so they are never text. */
  readonly encoded: readonly string[];
  /** Output bytes of each token; empty for special tokens (they never add text). */
  readonly bytes: readonly Uint8Array[];
  /** Ids that end generation; XGrammar allows them only where the grammar is complete. */
  readonly stopTokenIds: readonly number[];
  /** The tokenizer prepends a space (sentencepiece's metaspace) when encoding. */
  readonly prependSpace: boolean;
}

const BYTE_FALLBACK = /^<0x([0-9A-Fa-f]{2})>$/;
const METASPACE = '\u2581';
const encoder = new TextEncoder();

/** GPT-2's byte ↔ printable-character table, inverted: character → byte. */
function byteLevelDecoder(): Map<string, number> {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const map = new Map<string, number>();
  let next = 256;
  for (let b = 0; b < 256; b++) map.set(String.fromCodePoint(printable(b) ? b : next++), b);
  return map;
}

function detectType(tokenizer: Tokenizer): VocabType {
  if (tokenizer.tokenToId('<0x00>') !== undefined && tokenizer.tokenToId('<0xFF>') !== undefined) return 'byte_fallback';
  // Byte-level BPE spells a space as "Ġ" (U+0120) and has a token for it.
  if (tokenizer.tokenToId('\u0120') !== undefined) return 'byte_level';
  return 'raw';
}

export function tokenVocabulary(tokenizer: Tokenizer, size = tokenizer.vocabSize): TokenVocabulary {
  const type = detectType(tokenizer);
  const decoder = type === 'byte_level' ? byteLevelDecoder() : null;
  const encoded: string[] = [];
  const bytes: Uint8Array[] = [];
  let metaspaceTokens = 0;
  for (let id = 0; id < size; id++) {
    const token = id < tokenizer.vocabSize && !tokenizer.specialTokenIds.has(id) ? (tokenizer.idToToken(id) ?? '') : '';
    encoded.push(token);
    if (token.startsWith(METASPACE)) metaspaceTokens++;
    const byteToken = type === 'byte_fallback' ? BYTE_FALLBACK.exec(token) : null;
    if (byteToken) bytes.push(Uint8Array.of(parseInt(byteToken[1], 16)));
    else if (decoder) {
      const out = [...token].map((c) => decoder.get(c));
      bytes.push(out.every((b) => b !== undefined) ? Uint8Array.from(out as number[]) : encoder.encode(token));
    } else bytes.push(encoder.encode(type === 'byte_fallback' ? token.replaceAll(METASPACE, ' ') : token));
  }
  return {
    size,
    type,
    encoded,
    bytes,
    stopTokenIds: [...tokenizer.eosTokenIds],
    prependSpace: type === 'byte_fallback' && metaspaceTokens > 0,
  };
}
