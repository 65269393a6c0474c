/**
 * Media files generated for tests: PNG via fast-png's encoder, JPEG via jpeg-js's
 * encoder, and WAV written byte by byte from the RIFF/WAVE layout (independent of the
 * parser under test).
 */
import { encode as encodePng } from 'fast-png';
import jpeg from 'jpeg-js';

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
