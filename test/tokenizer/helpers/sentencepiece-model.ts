/**
 * Reads a sentencepiece .model file (protobuf ModelProto) just far enough to get its pieces
 * and scores, and writes them in the llama2.c tokenizer layout, as llama2.c's export script
 * does (▁ stored as a space, BOS/EOS wrapped in newlines). Lets the tests run the converter
 * on a 32,000-piece vocabulary (test/fixtures/sentencepiece-32k/).
 */

interface Cursor {
  offset: number;
}

function readVarint(bytes: Uint8Array, cursor: Cursor): number {
  let value = 0;
  let scale = 1;
  for (;;) {
    const byte = bytes[cursor.offset++];
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) return value;
    scale *= 128;
  }
}

function* fields(bytes: Uint8Array): Generator<{ field: number; varint?: number; bytes?: Uint8Array }> {
  const cursor: Cursor = { offset: 0 };
  while (cursor.offset < bytes.length) {
    const key = readVarint(bytes, cursor);
    const field = Math.floor(key / 8);
    const wireType = key % 8;
    if (wireType === 0) yield { field, varint: readVarint(bytes, cursor) };
    else if (wireType === 1) cursor.offset += 8;
    else if (wireType === 2) {
      const length = readVarint(bytes, cursor);
      yield { field, bytes: bytes.subarray(cursor.offset, cursor.offset + length) };
      cursor.offset += length;
    } else if (wireType === 5) {
      yield { field, bytes: bytes.subarray(cursor.offset, cursor.offset + 4) };
      cursor.offset += 4;
    } else throw new Error(`unsupported protobuf wire type ${wireType}`);
  }
}

export function readSentencepiecePieces(model: Uint8Array): { piece: string; score: number }[] {
  const decoder = new TextDecoder();
  const pieces: { piece: string; score: number }[] = [];
  for (const top of fields(model)) {
    if (top.field !== 1 || !top.bytes) continue; // ModelProto.pieces
    let piece = '';
    let score = 0;
    for (const inner of fields(top.bytes)) {
      if (inner.field === 1 && inner.bytes) piece = decoder.decode(inner.bytes);
      if (inner.field === 2 && inner.bytes) {
        score = new DataView(inner.bytes.buffer, inner.bytes.byteOffset, 4).getFloat32(0, true);
      }
    }
    pieces.push({ piece, score });
  }
  return pieces;
}

export function toLlama2cTokenizerBin(pieces: readonly { piece: string; score: number }[]): Uint8Array {
  const encoder = new TextEncoder();
  const stored = pieces.map(({ piece }, id) =>
    encoder.encode(id === 1 ? '\n<s>\n' : id === 2 ? '\n</s>\n' : piece.replaceAll('\u2581', ' ')),
  );
  const size = 4 + stored.reduce((total, bytes) => total + 8 + bytes.length, 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setInt32(0, Math.max(...stored.map((bytes) => bytes.length)), true);
  let offset = 4;
  stored.forEach((bytes, id) => {
    view.setFloat32(offset, pieces[id].score, true);
    view.setInt32(offset + 4, bytes.length, true);
    out.set(bytes, offset + 8);
    offset += 8 + bytes.length;
  });
  return out;
}
