/**
 * JPEGs as transformers' load_image gives them (PIL.Image.open + ImageOps.exif_transpose +
 * convert("RGB")): files Pillow wrote and the pixels Pillow decoded from them
 * (scripts/media/build_jpeg_fixtures.py, test/fixtures/media/jpeg). Under Node (sharp,
 * libjpeg-turbo) every file is pixel-identical; the pure-JS path of the other homes (jpeg-js)
 * turns files upright the same way but upsamples chroma differently, by the amounts the
 * README states.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadImageCodecs } from '../../src/media/decode/codecs.js';
import { decodeJpegUpright } from '../../src/media/decode/image.js';
import { decodeMedia } from '../../src/media/decode/index.js';
import { createNodeMediaFetcher } from '../../src/media/node.js';
import { resolveMediaConfig } from '../../src/media/index.js';
import { createNodeJpegDecoder } from '../../src/media/node-jpeg.js';

const DIR = join(import.meta.dirname, '..', 'fixtures', 'media', 'jpeg');
const reference = JSON.parse(readFileSync(join(DIR, 'reference.json'), 'utf8')) as {
  files: Record<string, { width: number; height: number; orientation: number; mode: string }>;
};
const LIMITS = { maxPixels: 1_000_000 };
const names = Object.keys(reference.files);

function pillowPixels(name: string): Uint8Array {
  return new Uint8Array(readFileSync(join(DIR, name.replace(/\.jpg$/, '.rgb'))));
}

function differences(actual: Uint8Array, expected: Uint8Array): { max: number; mean: number } {
  let max = 0;
  let sum = 0;
  for (let i = 0; i < expected.length; i++) {
    const d = Math.abs(actual[i] - expected[i]);
    max = Math.max(max, d);
    sum += d;
  }
  return { max, mean: sum / expected.length };
}

describe('JPEG under Node (libjpeg-turbo through sharp) equals Pillow', () => {
  const decoder = createNodeJpegDecoder();
  for (const name of names) {
    const { width, height, orientation, mode } = reference.files[name];
    it(`${name} (${mode}, EXIF orientation ${orientation})`, async () => {
      const image = await decodeJpegUpright(new Uint8Array(readFileSync(join(DIR, name))), LIMITS, decoder);
      expect([image.width, image.height]).toEqual([width, height]);
      expect(Buffer.from(image.rgb).equals(Buffer.from(pillowPixels(name)))).toBe(true);
    });
  }

  it('is what the Node media fetcher decodes with, and refuses a JPEG above the pixel limit from its header', async () => {
    const fetcher = createNodeMediaFetcher(resolveMediaConfig({}));
    const bytes = new Uint8Array(readFileSync(join(DIR, 'exif-6-420.jpg')));
    const media = { kind: 'image' as const, format: 'jpeg' as const, bytes, source: 'data' as const };
    const decoded = await decodeMedia(media, { ...fetcher.config, jpegDecoder: fetcher.jpegDecoder });
    expect(decoded.kind === 'image' && Buffer.from(decoded.rgb).equals(Buffer.from(pillowPixels('exif-6-420.jpg')))).toBe(true);
    await expect(decodeJpegUpright(bytes, { maxPixels: 1000 }, fetcher.jpegDecoder)).rejects.toMatchObject({ reason: 'too_large' });
    await expect(decodeJpegUpright(bytes.subarray(0, 200), LIMITS, fetcher.jpegDecoder)).rejects.toMatchObject({ reason: 'decode_failed' });
  });
});

describe('JPEG on the pure-JS path (workerd, browsers: jpeg-js)', () => {
  it('turns EXIF-rotated files upright and matches Pillow where no chroma is subsampled', async () => {
    await loadImageCodecs();
    for (const name of names) {
      const { width, height } = reference.files[name];
      const image = await decodeJpegUpright(new Uint8Array(readFileSync(join(DIR, name))), LIMITS);
      expect([image.width, image.height], name).toEqual([width, height]);
      const { max, mean } = differences(image.rgb, pillowPixels(name));
      // A wrong orientation would differ by ~100 on average; subsampled chroma differs at colour edges only.
      expect(mean, name).toBeLessThan(15);
      if (/444|gray|cmyk/.test(name)) expect(max, name).toBeLessThanOrEqual(3);
    }
  });
});
