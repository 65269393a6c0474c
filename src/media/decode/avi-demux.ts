/**
 * AVI (RIFF 'AVI ') demuxing, hand-written: the format is a flat list of RIFF chunks, and
 * the video stream's header plus the byte ranges of its frames in the 'movi' list are all
 * the sampler needs. OpenDML extensions (AVIX continuation lists past 1 GB) lie beyond
 * the 512 MB cap and are not read.
 */
import { mediaError } from '../errors.js';
import type { DemuxedVideo, VideoFrameRef } from './demuxed-video.js';

interface Chunk {
  id: string;
  /** For LIST/RIFF: the list type. */
  listType?: string;
  /** Start of the payload (after the id, size and, for lists, the list type). */
  start: number;
  end: number;
}

function fourCC(bytes: Uint8Array, offset: number): string {
  return String.fromCharCode(bytes[offset], bytes[offset + 1], bytes[offset + 2], bytes[offset + 3]);
}

function* chunks(bytes: Uint8Array, view: DataView, start: number, end: number): Generator<Chunk> {
  let offset = start;
  while (offset + 8 <= end) {
    const id = fourCC(bytes, offset);
    const size = view.getUint32(offset + 4, true);
    const payloadEnd = Math.min(offset + 8 + size, end);
    if (id === 'LIST' || id === 'RIFF') yield { id, listType: fourCC(bytes, offset + 8), start: offset + 12, end: payloadEnd };
    else yield { id, start: offset + 8, end: payloadEnd };
    offset = offset + 8 + size + (size & 1);
  }
}

interface VideoStream {
  index: number;
  scale: number;
  rate: number;
  compression: string;
  width: number;
  height: number;
}

function findVideoStream(bytes: Uint8Array, view: DataView, hdrl: Chunk): VideoStream | null {
  let index = 0;
  for (const strl of chunks(bytes, view, hdrl.start, hdrl.end)) {
    if (strl.listType !== 'strl') continue;
    let header: { type: string; scale: number; rate: number } | null = null;
    let format: { compression: string; width: number; height: number } | null = null;
    for (const chunk of chunks(bytes, view, strl.start, strl.end)) {
      if (chunk.id === 'strh' && chunk.end - chunk.start >= 28) {
        header = { type: fourCC(bytes, chunk.start), scale: view.getUint32(chunk.start + 20, true), rate: view.getUint32(chunk.start + 24, true) };
      } else if (chunk.id === 'strf' && chunk.end - chunk.start >= 20) {
        format = {
          width: view.getInt32(chunk.start + 4, true),
          height: Math.abs(view.getInt32(chunk.start + 8, true)),
          compression: fourCC(bytes, chunk.start + 16),
        };
      }
    }
    if (header?.type === 'vids' && format !== null) return { index, scale: header.scale, rate: header.rate, ...format };
    index++;
  }
  return null;
}

function collectFrames(bytes: Uint8Array, view: DataView, list: Chunk, ids: readonly string[], out: { offset: number; size: number }[]): void {
  for (const chunk of chunks(bytes, view, list.start, list.end)) {
    if (chunk.listType === 'rec ') collectFrames(bytes, view, chunk, ids, out);
    // Empty chunks are "repeat the previous frame" placeholders.
    else if (ids.includes(chunk.id) && chunk.end > chunk.start) out.push({ offset: chunk.start, size: chunk.end - chunk.start });
  }
}

export function demuxAvi(bytes: Uint8Array): DemuxedVideo {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const top = [...chunks(bytes, view, 12, bytes.length)];
  const hdrl = top.find((c) => c.listType === 'hdrl');
  const movi = top.find((c) => c.listType === 'movi');
  if (hdrl === undefined || movi === undefined) throw mediaError('decode_failed', 'the AVI has no header or no movi list');
  const stream = findVideoStream(bytes, view, hdrl);
  if (stream === null) throw mediaError('decode_failed', 'the AVI has no video stream');
  const prefix = String(stream.index).padStart(2, '0');
  const ranges: { offset: number; size: number }[] = [];
  collectFrames(bytes, view, movi, [`${prefix}dc`, `${prefix}db`], ranges);
  const secondsPerFrame = stream.rate > 0 && stream.scale > 0 ? stream.scale / stream.rate : 0;
  const frames: VideoFrameRef[] = ranges.map((r, i) => ({ ...r, time: i * secondsPerFrame }));
  return {
    container: 'AVI',
    codec: stream.compression.trim(),
    width: stream.width,
    height: stream.height,
    duration: frames.length * secondsPerFrame,
    frames,
  };
}
