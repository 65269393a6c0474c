/**
 * File formats told apart by their leading bytes. URLs, file names and Content-Type are
 * never trusted: a PNG served as image/jpeg is a PNG, an HTML page served as image/png
 * is refused.
 */
import { mediaError } from './errors.js';
import { FORMATS_BY_KIND, type MediaFormat, type MediaKind } from './types.js';

const ASF_HEADER_GUID = [0x30, 0x26, 0xb2, 0x75, 0x8e, 0x66, 0xcf, 0x11, 0xa6, 0xd9, 0x00, 0xaa, 0x00, 0x62, 0xce, 0x6c];

function startsWith(bytes: Uint8Array, prefix: readonly number[], offset = 0): boolean {
  if (bytes.length < offset + prefix.length) return false;
  return prefix.every((b, i) => bytes[offset + i] === b);
}

function ascii(bytes: Uint8Array, offset: number, length: number): string {
  if (bytes.length < offset + length) return '';
  return String.fromCharCode(...bytes.subarray(offset, offset + length));
}

/** An MPEG audio frame header: sync, a defined version and layer, a usable bitrate and rate. */
function isMpegAudioFrame(bytes: Uint8Array, offset = 0): boolean {
  if (bytes.length < offset + 4) return false;
  const [b0, b1, b2] = [bytes[offset], bytes[offset + 1], bytes[offset + 2]];
  if (b0 !== 0xff || (b1 & 0xe0) !== 0xe0) return false;
  const version = (b1 >> 3) & 0x3;
  const layer = (b1 >> 1) & 0x3;
  const bitrate = b2 >> 4;
  const rate = (b2 >> 2) & 0x3;
  return version !== 1 && layer !== 0 && bitrate !== 0xf && rate !== 0x3;
}

export function sniffFormat(bytes: Uint8Array): MediaFormat | null {
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (ascii(bytes, 0, 4) === 'RIFF') {
    const form = ascii(bytes, 8, 4);
    if (form === 'WAVE') return 'wav';
    if (form === 'AVI ') return 'avi';
    return null;
  }
  if (ascii(bytes, 0, 4) === 'fLaC') return 'flac';
  if (ascii(bytes, 0, 3) === 'ID3' || isMpegAudioFrame(bytes)) return 'mp3';
  if (ascii(bytes, 4, 4) === 'ftyp') return 'mp4';
  if (startsWith(bytes, ASF_HEADER_GUID)) return 'wmv';
  // EBML: WebM and Matroska alike (ffmpeg's demuxer reads both).
  if (startsWith(bytes, [0x1a, 0x45, 0xdf, 0xa3])) return 'webm';
  return null;
}

/** A hint for the refusal message when the bytes are something else entirely. */
function describeUnknown(bytes: Uint8Array): string {
  const head = String.fromCharCode(...bytes.subarray(0, 64)).trimStart().toLowerCase();
  if (head.startsWith('<!doctype html') || head.startsWith('<html')) return 'an HTML page';
  if (head.startsWith('<?xml') || head.startsWith('<svg')) return 'XML/SVG';
  if (head.startsWith('{') || head.startsWith('[')) return 'JSON or text';
  if (startsWith(bytes, [0x47, 0x49, 0x46, 0x38])) return 'a GIF image';
  if (ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 4) === 'WEBP') return 'a WebP image';
  if (ascii(bytes, 0, 4) === 'OggS') return 'an Ogg stream';
  if (bytes.length === 0) return 'empty';
  return 'of an unrecognised format';
}

/** The format of `bytes`, which must be one `kind` accepts; throws format_not_allowed. */
export function requireFormat(bytes: Uint8Array, kind: MediaKind): MediaFormat {
  const format = sniffFormat(bytes);
  const allowed = FORMATS_BY_KIND[kind];
  if (format !== null && allowed.includes(format)) return format;
  const found = format === null ? describeUnknown(bytes) : `${format.toUpperCase()}`;
  throw mediaError(
    'format_not_allowed',
    `the ${kind} is ${format === null ? found : `a ${found} file`}, not one of the accepted ${kind} formats (${allowed
      .map((f) => f.toUpperCase())
      .join(', ')}); the format is taken from the file's content, not its name or Content-Type`,
  );
}
