/**
 * An MP4 whose `moov` (the index) comes after its `mdat` (the frames) — what most
 * encoders write unless told "faststart" — cannot be demuxed from a pipe: the demuxer
 * reaches the index only at the end and would have to seek back. The bytes are in
 * memory anyway, so rather than writing a temporary file this moves `moov` in front of
 * the first `mdat` and shifts every chunk offset (stco/co64) that points past the
 * insertion point by the size of `moov`: the same remux as ffmpeg's `-movflags
 * faststart`, in one copy of the file.
 */
import { mediaError } from '../errors.js';

interface Box {
  type: string;
  start: number;
  /** Where the payload starts (after the 8- or 16-byte header). */
  body: number;
  end: number;
}

/** Containers on the way from moov to the chunk offset tables. */
const CONTAINERS = new Set(['moov', 'trak', 'mdia', 'minf', 'stbl', 'edts', 'dinf', 'udta', 'mvex']);

function readBoxes(view: DataView, from: number, to: number): Box[] {
  const boxes: Box[] = [];
  let at = from;
  while (at + 8 <= to) {
    let size = view.getUint32(at);
    const type = String.fromCharCode(view.getUint8(at + 4), view.getUint8(at + 5), view.getUint8(at + 6), view.getUint8(at + 7));
    let body = at + 8;
    if (size === 1) {
      if (at + 16 > to) break;
      const big = view.getBigUint64(at + 8);
      if (big > BigInt(Number.MAX_SAFE_INTEGER)) throw mediaError('decode_failed', `the MP4 box "${type}" has an impossible size`);
      size = Number(big);
      body = at + 16;
    } else if (size === 0) {
      size = to - at;
    }
    if (size < body - at || at + size > to) {
      // A truncated last box (an interrupted download) is left for the demuxer to report.
      boxes.push({ type, start: at, body, end: to });
      break;
    }
    boxes.push({ type, start: at, body, end: at + size });
    at += size;
  }
  return boxes;
}

/** Adds `delta` to every chunk offset in [from, until), in place. */
function shiftChunkOffsets(view: DataView, box: Box, from: number, until: number, delta: number): void {
  for (const child of readBoxes(view, box.body, box.end)) {
    if (CONTAINERS.has(child.type)) {
      shiftChunkOffsets(view, child, from, until, delta);
    } else if (child.type === 'stco' || child.type === 'co64') {
      const wide = child.type === 'co64';
      const count = view.getUint32(child.body + 4);
      const first = child.body + 8;
      if (first + count * (wide ? 8 : 4) > child.end) throw mediaError('decode_failed', `the MP4's ${child.type} table is truncated`);
      for (let i = 0; i < count; i++) {
        if (wide) {
          const offset = view.getBigUint64(first + i * 8);
          if (offset >= BigInt(from) && offset < BigInt(until)) view.setBigUint64(first + i * 8, offset + BigInt(delta));
        } else {
          const offset = view.getUint32(first + i * 4);
          if (offset >= from && offset < until) {
            if (offset + delta > 0xffffffff) throw mediaError('decode_failed', 'the MP4 is too large to reorder for streaming');
            view.setUint32(first + i * 4, offset + delta);
          }
        }
      }
    }
  }
}

/**
 * The file with `moov` before the first `mdat`; the input itself when it already is
 * (or has no such pair: fragmented, truncated, not really an MP4: the demuxer decides).
 */
export function mp4WithMoovFirst(bytes: Uint8Array): Uint8Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const top = readBoxes(view, 0, bytes.length);
  const mdat = top.findIndex((box) => box.type === 'mdat');
  const moov = top.findIndex((box) => box.type === 'moov');
  if (mdat < 0 || moov < 0 || moov < mdat) return bytes;
  const moovBox = top[moov];
  const insertAt = top[mdat].start;
  // A copy of its own (a Buffer's slice() would be a view into the file).
  const moovBytes = new Uint8Array(moovBox.end - moovBox.start);
  moovBytes.set(bytes.subarray(moovBox.start, moovBox.end));
  const size = moovBytes.length;
  // Data between the insertion point and the old moov moves up by the moov's size; data
  // after the old moov stays where it was.
  const moovView = new DataView(moovBytes.buffer);
  const moovCopy: Box = { type: 'moov', start: 0, body: moovBox.body - moovBox.start, end: size };
  shiftChunkOffsets(moovView, moovCopy, insertAt, moovBox.start, size);
  const out = new Uint8Array(bytes.length);
  out.set(bytes.subarray(0, insertAt), 0);
  out.set(moovBytes, insertAt);
  out.set(bytes.subarray(insertAt, moovBox.start), insertAt + size);
  out.set(bytes.subarray(moovBox.end), moovBox.end);
  return out;
}
