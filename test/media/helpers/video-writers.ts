/**
 * Small videos for tests: Motion JPEG frames of flat, distinct colours, in an MP4
 * (written with mp4box's muxer) or an AVI (RIFF chunks written by hand from the AVI
 * layout), and containers that announce codecs with no decoder here.
 */
import { createFile } from 'mp4box';
import jpeg from 'jpeg-js';

export function flatJpeg(width: number, height: number, rgb: readonly number[]): Uint8Array {
  const data = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) data.set([rgb[0], rgb[1], rgb[2], 255], i * 4);
  return new Uint8Array(jpeg.encode({ width, height, data }, 95).data);
}

/** Frame i is flat grey of level 20 * i, so a decoded frame tells which one it was. */
export function greyLevel(frameIndex: number): number {
  return 20 * frameIndex;
}

export function mjpegMp4(frameCount: number, width = 16, height = 16, frameMs = 100, codec: 'mjpg' | 'avc1' = 'mjpg'): Uint8Array {
  const file = createFile();
  const track = file.addTrack({ type: codec, width, height, timescale: 1000, hdlr: 'vide' });
  for (let i = 0; i < frameCount; i++) {
    const level = greyLevel(i);
    const sample = codec === 'mjpg' ? flatJpeg(width, height, [level, level, level]) : new Uint8Array([0, 0, 0, 1, 0x65, i]);
    file.addSample(track, sample as Uint8Array<ArrayBuffer>, { duration: frameMs, is_sync: true });
  }
  return new Uint8Array(file.getBuffer().buffer);
}

function riffChunk(id: string, payload: Uint8Array): Uint8Array {
  const padded = payload.length + (payload.length & 1);
  const out = new Uint8Array(8 + padded);
  const view = new DataView(out.buffer);
  for (let i = 0; i < 4; i++) out[i] = id.charCodeAt(i);
  view.setUint32(4, payload.length, true);
  out.set(payload, 8);
  return out;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

function list(type: string, children: readonly Uint8Array[]): Uint8Array {
  const typeBytes = new Uint8Array([...type].map((c) => c.charCodeAt(0)));
  return riffChunk('LIST', concat([typeBytes, ...children]));
}

function words(values: readonly [number, 2 | 4][]): Uint8Array {
  const out = new Uint8Array(values.reduce((n, [, size]) => n + size, 0));
  const view = new DataView(out.buffer);
  let offset = 0;
  for (const [value, size] of values) {
    if (size === 2) view.setUint16(offset, value, true);
    else view.setUint32(offset, value, true);
    offset += size;
  }
  return out;
}

const fourcc = (s: string) => new DataView(new Uint8Array([...s].map((c) => c.charCodeAt(0))).buffer).getUint32(0, true);

/** An AVI with one video stream of `compression` (FourCC) at 10 fps; frame payloads as given. */
export function avi(frames: readonly Uint8Array[], width: number, height: number, compression: string): Uint8Array {
  const avih = riffChunk('avih', words([[100_000, 4], [0, 4], [0, 4], [0x10, 4], [frames.length, 4], [0, 4], [1, 4], [0, 4], [width, 4], [height, 4], [0, 4], [0, 4], [0, 4], [0, 4]]));
  const strh = riffChunk(
    'strh',
    words([[fourcc('vids'), 4], [fourcc(compression), 4], [0, 4], [0, 2], [0, 2], [0, 4], [1, 4], [10, 4], [0, 4], [frames.length, 4], [0, 4], [0xffffffff, 4], [0, 4], [0, 2], [0, 2], [width, 2], [height, 2]]),
  );
  const strf = riffChunk('strf', words([[40, 4], [width, 4], [height, 4], [1, 2], [24, 2], [fourcc(compression), 4], [width * height * 3, 4], [0, 4], [0, 4], [0, 4], [0, 4]]));
  const hdrl = list('hdrl', [avih, list('strl', [strh, strf])]);
  const movi = list('movi', frames.map((f) => riffChunk('00dc', f)));
  const body = concat([new Uint8Array([...'AVI '].map((c) => c.charCodeAt(0))), hdrl, movi]);
  return riffChunk('RIFF', body);
}

export function mjpegAvi(frameCount: number, width = 16, height = 16): Uint8Array {
  const frames = Array.from({ length: frameCount }, (_, i) => flatJpeg(width, height, [greyLevel(i), greyLevel(i), greyLevel(i)]));
  return avi(frames, width, height, 'MJPG');
}

/** The 16-byte ASF header object GUID followed by filler: recognised as WMV, not decodable. */
export function asfStub(): Uint8Array {
  return new Uint8Array([0x30, 0x26, 0xb2, 0x75, 0x8e, 0x66, 0xcf, 0x11, 0xa6, 0xd9, 0x00, 0xaa, 0x00, 0x62, 0xce, 0x6c, ...new Array(64).fill(0)]);
}
