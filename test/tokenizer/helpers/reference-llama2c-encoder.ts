/**
 * The llama2.c encoder, written from the description in shared/models/README.md and kept
 * independent of the code under test: it reads the binary itself and merges naively.
 *
 * Layout: int32 max_token_length, then per token float32 score, int32 length, bytes.
 * Encoding: BOS, a dummy-prefix " " (for non-empty text), each code point as its own piece
 * or else its UTF-8 bytes as tokens 3 + byte, then repeatedly merge the adjacent pair whose
 * concatenation is a vocab piece with the highest score (first such pair on ties).
 */
export interface ReferenceVocab {
  pieces: string[];
  scores: number[];
  idOf: Map<string, number>;
}

export function readReferenceVocab(bin: Uint8Array): ReferenceVocab {
  const view = new DataView(bin.buffer, bin.byteOffset, bin.byteLength);
  const decoder = new TextDecoder();
  const pieces: string[] = [];
  const scores: number[] = [];
  let offset = 4;
  while (offset < bin.byteLength) {
    scores.push(view.getFloat32(offset, true));
    const length = view.getInt32(offset + 4, true);
    offset += 8;
    pieces.push(decoder.decode(bin.subarray(offset, offset + length)));
    offset += length;
  }
  const idOf = new Map<string, number>();
  pieces.forEach((piece, id) => {
    if (!idOf.has(piece)) idOf.set(piece, id);
  });
  return { pieces, scores, idOf };
}

const BOS = 1;
const BYTE_TOKEN_OFFSET = 3;

export function referenceEncode(vocab: ReferenceVocab, text: string, addBos = true): number[] {
  const tokens: number[] = addBos ? [BOS] : [];
  if (text.length > 0) tokens.push(vocab.idOf.get(' ')!);
  const utf8 = new TextEncoder();
  for (const char of text) {
    const id = vocab.idOf.get(char);
    if (id !== undefined) tokens.push(id);
    else for (const byte of utf8.encode(char)) tokens.push(byte + BYTE_TOKEN_OFFSET);
  }
  for (;;) {
    let bestScore = -Infinity;
    let bestId = -1;
    let bestAt = -1;
    for (let i = 0; i + 1 < tokens.length; i++) {
      const merged = vocab.idOf.get(vocab.pieces[tokens[i]] + vocab.pieces[tokens[i + 1]]);
      if (merged !== undefined && vocab.scores[merged] > bestScore) {
        bestScore = vocab.scores[merged];
        bestId = merged;
        bestAt = i;
      }
    }
    if (bestAt < 0) return tokens;
    tokens.splice(bestAt, 2, bestId);
  }
}
