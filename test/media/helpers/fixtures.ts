/**
 * Media files generated for tests: PNG via fast-png's encoder, JPEG via jpeg-js's
 * encoder, and WAV written byte by byte from the RIFF/WAVE layout (independent of the
 * parser under test).
 */
import { encode as encodePng } from 'fast-png';
import jpeg from 'jpeg-js';
import { deflateSync } from 'node:zlib';

/** A 3×2 RGB image with distinct, known pixels (row-major). */
export const SMALL_RGB = {
  width: 3,
  height: 2,
  pixels: [
    [255, 0, 0], [0, 255, 0], [0, 0, 255],
    [10, 20, 30], [200, 150, 100], [255, 255, 255],
  ],
};

export function smallPng(): Uint8Array {
  const data = new Uint8Array(SMALL_RGB.pixels.flat());
  return encodePng({ width: SMALL_RGB.width, height: SMALL_RGB.height, data, channels: 3, depth: 8 });
}

/** A JPEG of `width`×`height` in two flat halves (left `left`, right `right`), at quality 95. */
export function twoToneJpeg(width: number, height: number, left: number[], right: number[]): Uint8Array {
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const color = x < width / 2 ? left : right;
      data.set([color[0], color[1], color[2], 255], (y * width + x) * 4);
    }
  }
  return new Uint8Array(jpeg.encode({ width, height, data }, 95).data);
}

function ascii(view: DataView, offset: number, text: string): void {
  for (let i = 0; i < text.length; i++) view.setUint8(offset + i, text.charCodeAt(i));
}

/** A 16-bit PCM WAV; `channels` interleaved arrays of equal length. */
export function pcm16Wav(channels: Int16Array[], sampleRate: number): Uint8Array {
  const frames = channels[0].length;
  const blockAlign = channels.length * 2;
  const dataBytes = frames * blockAlign;
  const view = new DataView(new ArrayBuffer(44 + dataBytes));
  ascii(view, 0, 'RIFF');
  view.setUint32(4, 36 + dataBytes, true);
  ascii(view, 8, 'WAVE');
  ascii(view, 12, 'fmt ');
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true); // PCM
  view.setUint16(22, channels.length, true);
  view.setUint32(24, sampleRate, true);
  view.setUint32(28, sampleRate * blockAlign, true);
  view.setUint16(32, blockAlign, true);
  view.setUint16(34, 16, true);
  ascii(view, 36, 'data');
  view.setUint32(40, dataBytes, true);
  for (let i = 0; i < frames; i++) {
    channels.forEach((ch, c) => view.setInt16(44 + i * blockAlign + c * 2, ch[i], true));
  }
  return new Uint8Array(view.buffer);
}

export const HTML_PAGE = '<!DOCTYPE html><html><body>not an image</body></html>';

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * A valid 8-bit grayscale PNG of `width`×`height` zeros: a decompression bomb (6324×6324
 * is ~40 KB on the wire, 120 MB as RGB), written chunk by chunk with Node's zlib.
 */
export function zeroPng(width: number, height: number): Uint8Array {
  const chunk = (type: string, data: Uint8Array) => {
    const out = new Uint8Array(12 + data.length);
    const view = new DataView(out.buffer);
    view.setUint32(0, data.length);
    for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
    out.set(data, 8);
    view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
    return out;
  };
  const header = new Uint8Array(13);
  const view = new DataView(header.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  header.set([8, 0, 0, 0, 0], 8); // 8-bit, grayscale, deflate, adaptive filtering, no interlace
  // Every row: filter byte 0, then zeros.
  const idat = new Uint8Array(deflateSync(new Uint8Array(height * (width + 1)), { level: 9 }));
  const parts = [new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', idat), chunk('IEND', new Uint8Array())];
  const png = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    png.set(part, at);
    at += part.length;
  }
  return png;
}
