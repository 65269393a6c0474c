/**
 * Images decode to the RGB values they were made of.
 */
import { encode as encodePng } from 'fast-png';
import { describe, expect, it } from 'vitest';
import { decodeJpegImage, decodePngImage } from '../../src/media/decode/image.js';
import { MediaError } from '../../src/media/errors.js';
import { SMALL_RGB, smallPng, twoToneJpeg } from './helpers/fixtures.js';
import { loadImageCodecs } from '../../src/media/decode/codecs.js';

// The server loads the codecs with its first media request (decodeMedia); these tests call the decoders directly.
await loadImageCodecs();

const LIMITS = { maxPixels: 1_000_000 };

function pixel(image: { width: number; rgb: Uint8Array }, x: number, y: number): number[] {
  const i = (y * image.width + x) * 3;
  return Array.from(image.rgb.subarray(i, i + 3));
}

describe('PNG', () => {
  it('decodes an 8-bit RGB PNG to its exact pixels', () => {
    const image = decodePngImage(smallPng(), LIMITS);
    expect([image.width, image.height]).toEqual([3, 2]);
    expect(Array.from(image.rgb)).toEqual(SMALL_RGB.pixels.flat());
  });

  it('drops alpha and expands grey, 16-bit and low-bit-depth PNGs to 8-bit RGB', () => {
    const rgba = encodePng({ width: 2, height: 1, channels: 4, depth: 8, data: new Uint8Array([10, 20, 30, 0, 40, 50, 60, 128]) });
    expect(Array.from(decodePngImage(rgba, LIMITS).rgb)).toEqual([10, 20, 30, 40, 50, 60]);

    const grey = encodePng({ width: 2, height: 1, channels: 1, depth: 8, data: new Uint8Array([7, 250]) });
    expect(Array.from(decodePngImage(grey, LIMITS).rgb)).toEqual([7, 7, 7, 250, 250, 250]);

    const deep = encodePng({ width: 1, height: 1, channels: 3, depth: 16, data: new Uint16Array([0xffff, 0x8000, 0x00ff]) });
    expect(Array.from(decodePngImage(deep, LIMITS).rgb)).toEqual([255, 128, 0]);

    // 1-bit grey, 10 pixels: rows pad to whole bytes, values 0/1 scale to 0/255.
    const bits = encodePng({ width: 10, height: 1, channels: 1, depth: 1, data: new Uint8Array([0b10110000, 0b01000000]) });
    const row = decodePngImage(bits, LIMITS);
    expect(Array.from({ length: 10 }, (_, x) => pixel(row, x, 0)[0])).toEqual([255, 0, 255, 255, 0, 0, 0, 0, 0, 255]);
  });

  it('refuses a PNG whose header declares more pixels than the limit, before decoding it', () => {
    const png = smallPng();
    const view = new DataView(png.buffer, png.byteOffset);
    view.setUint32(16, 100_000); // IHDR width
    view.setUint32(20, 100_000); // IHDR height
    expect(() => decodePngImage(png, LIMITS)).toThrow(expect.objectContaining({ reason: 'too_large' }));
  });

  it('refuses a truncated PNG as undecodable', () => {
    const png = smallPng().subarray(0, 40);
    const error = (() => {
      try {
        decodePngImage(png, LIMITS);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(MediaError);
    expect((error as MediaError).reason).toBe('decode_failed');
  });
});

describe('JPEG', () => {
  it('decodes a two-tone JPEG to colours close to the originals (JPEG is lossy)', () => {
    const image = decodeJpegImage(twoToneJpeg(32, 16, [220, 30, 40], [20, 60, 200]), LIMITS);
    expect([image.width, image.height]).toEqual([32, 16]);
    expect(image.rgb.length).toBe(32 * 16 * 3);
    // Away from the edge between the halves, flat areas survive quality 95 within a few levels.
    for (const [x, expected] of [[4, [220, 30, 40]], [27, [20, 60, 200]]] as const) {
      pixel(image, x, 8).forEach((v, c) => expect(Math.abs(v - expected[c])).toBeLessThanOrEqual(6));
    }
  });

  it('refuses a JPEG larger than the pixel limit', () => {
    expect(() => decodeJpegImage(twoToneJpeg(64, 64, [0, 0, 0], [255, 255, 255]), { maxPixels: 1000 })).toThrow(
      expect.objectContaining({ reason: 'too_large' }),
    );
  });

  it('refuses a corrupt JPEG', () => {
    const bytes = twoToneJpeg(16, 16, [0, 0, 0], [255, 255, 255]).subarray(0, 30);
    expect(() => decodeJpegImage(bytes, LIMITS)).toThrow(expect.objectContaining({ reason: 'decode_failed' }));
  });
});
