/**
 * What a media file says about its own size, read from its header without decoding it:
 * the pixels of an image, the duration of audio. A request's media is judged by these
 * figures (decompression bombs: a 40 KB PNG can declare 6324×6324 zeros, a 2 KB WAV at
 * 1 Hz half an hour that resamples to 29 M samples) before any decoder runs; the
 * decoders keep their own checks as the backstop for files that lie.
 *
 * Only fixed header fields are read, so each reader costs microseconds whatever the
 * file's size.
 */
import { mediaError } from '../errors.js';
import type { MediaFormat } from '../types.js';

export type DeclaredSize =
  | { kind: 'image'; width: number; height: number }
  /**
   * `seconds` null: the header does not say (a streamed FLAC); the decoder's maxSeconds bounds it.
   * `exact`: the header counts the samples the decoder gives (WAV, FLAC); an MP3's duration
   * counts its encoder's padding, or is estimated from a bitrate.
   */
  | { kind: 'audio'; sampleRate: number; seconds: number | null; exact?: boolean }
  /** Video size comes from the demuxer (ffmpeg), not from a fixed header. */
  | { kind: 'video' };

function ascii(bytes: Uint8Array, offset: number, length: number): string {
  if (bytes.length < offset + length) return '';
  return String.fromCharCode(...bytes.subarray(offset, offset + length));
}

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function badHeader(what: string): never {
  throw mediaError('decode_failed', `the ${what} header is truncated or invalid`);
}

function image(width: number, height: number, what: string): DeclaredSize {
  if (!(width > 0 && height > 0)) throw mediaError('decode_failed', `the ${what} declares an invalid size ${width}×${height}`);
  return { kind: 'image', width, height };
}

export function pngDeclaredSize(bytes: Uint8Array): DeclaredSize {
  if (bytes.length < 24 || ascii(bytes, 12, 4) !== 'IHDR') throw mediaError('decode_failed', 'the PNG has no IHDR header');
  return image(view(bytes).getUint32(16), view(bytes).getUint32(20), 'PNG');
}

/** SOF0–SOF15 except DHT (C4), JPG (C8) and DAC (CC): the frame header carries the size. */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

/** Walks the marker segments up to the first frame header (before any entropy-coded data). */
export function jpegDeclaredSize(bytes: Uint8Array): DeclaredSize {
  const data = view(bytes);
  let offset = 2;
  while (offset + 4 <= bytes.length) {
    if (bytes[offset] !== 0xff) badHeader('JPEG');
    const marker = bytes[offset + 1];
    if (marker === 0xff) {
      offset += 1; // fill byte
      continue;
    }
    // Standalone markers carry no length.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      offset += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) break; // end of image / start of scan before any frame
    const length = data.getUint16(offset + 2);
    if (length < 2) badHeader('JPEG');
    if (isStartOfFrame(marker)) {
      if (offset + 9 > bytes.length) badHeader('JPEG');
      // A height of 0 is defined later by a DNL marker: too rare to read a bomb's word on it.
      return image(data.getUint16(offset + 7), data.getUint16(offset + 5), 'JPEG');
    }
    offset += 2 + length;
  }
  throw mediaError('decode_failed', 'the JPEG has no frame header before its image data');
}

export function gifDeclaredSize(bytes: Uint8Array): DeclaredSize {
  if (bytes.length < 10) badHeader('GIF');
  return image(view(bytes).getUint16(6, true), view(bytes).getUint16(8, true), 'GIF');
}

export function bmpDeclaredSize(bytes: Uint8Array): DeclaredSize {
  if (bytes.length < 26) badHeader('BMP');
  // A negative height is a top-down bitmap.
  return image(Math.abs(view(bytes).getInt32(18, true)), Math.abs(view(bytes).getInt32(22, true)), 'BMP');
}

export function webpDeclaredSize(bytes: Uint8Array): DeclaredSize {
  const data = view(bytes);
  const chunk = ascii(bytes, 12, 4);
  if (chunk === 'VP8X' && bytes.length >= 30) {
    const uint24 = (at: number) => data.getUint8(at) | (data.getUint8(at + 1) << 8) | (data.getUint8(at + 2) << 16);
    return image(uint24(24) + 1, uint24(27) + 1, 'WebP');
  }
  if (chunk === 'VP8L' && bytes.length >= 25 && bytes[20] === 0x2f) {
    const bits = data.getUint32(21, true);
    return image((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1, 'WebP');
  }
  if (chunk === 'VP8 ' && bytes.length >= 30 && bytes[23] === 0x9d && bytes[24] === 0x01 && bytes[25] === 0x2a) {
    return image(data.getUint16(26, true) & 0x3fff, data.getUint16(28, true) & 0x3fff, 'WebP');
  }
  badHeader('WebP');
}

/** The fmt chunk's rate and frame size and the data chunk's length (clipped to the file, as the decoder reads it). */
export function wavDeclaredSize(bytes: Uint8Array): DeclaredSize {
  const data = view(bytes);
  let sampleRate = 0;
  let blockAlign = 0;
  let offset = 12;
  while (offset + 8 <= bytes.length) {
    const id = ascii(bytes, offset, 4);
    const size = data.getUint32(offset + 4, true);
    const body = offset + 8;
    if (id === 'fmt ' && body + 16 <= bytes.length) {
      sampleRate = data.getUint32(body + 4, true);
      blockAlign = data.getUint16(body + 12, true);
    }
    if (id === 'data') {
      if (sampleRate === 0 || blockAlign === 0) throw mediaError('decode_failed', 'the WAV has no usable fmt chunk before its data');
      const frames = Math.floor(Math.min(size, bytes.length - body) / blockAlign);
      return { kind: 'audio', sampleRate, seconds: frames / sampleRate, exact: true };
    }
    offset = body + size + (size & 1);
  }
  throw mediaError('decode_failed', 'the WAV has no data chunk');
}

/** STREAMINFO, the first metadata block: 20-bit sample rate and 36-bit total samples (0: unknown). */
export function flacDeclaredSize(bytes: Uint8Array): DeclaredSize {
  if (bytes.length < 26 || (bytes[4] & 0x7f) !== 0) badHeader('FLAC');
  const at = 8 + 10;
  const sampleRate = (bytes[at] << 12) | (bytes[at + 1] << 4) | (bytes[at + 2] >> 4);
  const totalSamples = (bytes[at + 3] & 0x0f) * 2 ** 32 + view(bytes).getUint32(at + 4);
  if (sampleRate === 0) throw mediaError('decode_failed', 'the FLAC declares a sample rate of 0');
  return { kind: 'audio', sampleRate, seconds: totalSamples === 0 ? null : totalSamples / sampleRate, exact: true };
}

const MPEG1_BITRATES = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const MPEG2_BITRATES = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
const LAYER1_BITRATES = [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448];
const MPEG1_RATES = [44100, 48000, 32000];

/**
 * MP3: the first frame's rate; the duration from its Xing/Info frame count when there is
 * one, else from the file's length at the first frame's bitrate (exact for constant
 * bitrate; for a variable one an estimate, the decoder's maxSeconds the backstop).
 */
export function mp3DeclaredSize(bytes: Uint8Array): DeclaredSize {
  let offset = 0;
  if (ascii(bytes, 0, 3) === 'ID3' && bytes.length >= 10) {
    offset = 10 + ((bytes[6] & 0x7f) << 21) + ((bytes[7] & 0x7f) << 14) + ((bytes[8] & 0x7f) << 7) + (bytes[9] & 0x7f);
  }
  // The first frame sync within a short window after the tag.
  const end = Math.min(bytes.length - 4, offset + 64 * 1024);
  while (offset < end && !(bytes[offset] === 0xff && (bytes[offset + 1] & 0xe0) === 0xe0)) offset++;
  if (offset >= end) badHeader('MP3');
  const version = (bytes[offset + 1] >> 3) & 0x3; // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
  const layer = (bytes[offset + 1] >> 1) & 0x3; // 3: layer I, 2: II, 1: III
  const bitrateIndex = bytes[offset + 2] >> 4;
  const rateIndex = (bytes[offset + 2] >> 2) & 0x3;
  if (version === 1 || layer === 0 || bitrateIndex === 0 || bitrateIndex === 0xf || rateIndex === 3) badHeader('MP3');
  const sampleRate = MPEG1_RATES[rateIndex] / (version === 3 ? 1 : version === 2 ? 2 : 4);
  const kbps = (layer === 3 ? LAYER1_BITRATES : version === 3 ? MPEG1_BITRATES : MPEG2_BITRATES)[bitrateIndex];
  const samplesPerFrame = layer === 3 ? 384 : layer === 1 && version !== 3 ? 576 : 1152;
  const mono = (bytes[offset + 3] >> 6) === 3;
  const sideInfo = version === 3 ? (mono ? 17 : 32) : mono ? 9 : 17;
  const xing = offset + 4 + sideInfo;
  const tag = ascii(bytes, xing, 4);
  if ((tag === 'Xing' || tag === 'Info') && xing + 12 <= bytes.length && (view(bytes).getUint32(xing + 4) & 1) === 1) {
    return { kind: 'audio', sampleRate, seconds: (view(bytes).getUint32(xing + 8) * samplesPerFrame) / sampleRate };
  }
  return { kind: 'audio', sampleRate, seconds: ((bytes.length - offset) * 8) / (kbps * 1000) };
}

/** The size `bytes` of `format` declare; throws MediaError (decode_failed) on a header that cannot be read. */
export function declaredSize(bytes: Uint8Array, format: MediaFormat): DeclaredSize {
  switch (format) {
    case 'png':
      return pngDeclaredSize(bytes);
    case 'jpeg':
      return jpegDeclaredSize(bytes);
    case 'wav':
      return wavDeclaredSize(bytes);
    case 'flac':
      return flacDeclaredSize(bytes);
    case 'mp3':
      return mp3DeclaredSize(bytes);
    case 'mp4':
    case 'avi':
    case 'wmv':
    case 'webm':
      return { kind: 'video' };
  }
}
