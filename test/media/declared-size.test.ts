/**
 * Sizes read from media headers without decoding, against the size the real libraries
 * report: Pillow for the image fixtures (scripts/media/make_header_fixtures.py wrote them
 * and sizes.json), and the encoders' own input for PNG, WAV, FLAC and MP3.
 */
import { readFileSync } from 'node:fs';
import { Mp3Encoder } from '@breezystack/lamejs';
import { describe, expect, it } from 'vitest';
import {
  bmpDeclaredSize,
  declaredSize,
  gifDeclaredSize,
  jpegDeclaredSize,
  pngDeclaredSize,
  webpDeclaredSize,
  type DeclaredSize,
} from '../../src/media/decode/declared-size.js';
import { verbatimFlac } from './helpers/flac-writer.js';
import { pcm16Wav, smallPng, twoToneJpeg } from './helpers/fixtures.js';

const HEADERS = new URL('../fixtures/media/headers/', import.meta.url);
const pillowSizes = JSON.parse(readFileSync(new URL('sizes.json', HEADERS), 'utf8')) as Record<string, { width: number; height: number }>;
const readers: Record<string, (bytes: Uint8Array) => DeclaredSize> = {
  png: pngDeclaredSize,
  jpg: jpegDeclaredSize,
  gif: gifDeclaredSize,
  bmp: bmpDeclaredSize,
  webp: webpDeclaredSize,
};

describe('declared image sizes', () => {
  it.each(Object.keys(pillowSizes))('%s: the size Pillow reports', (name) => {
    const bytes = new Uint8Array(readFileSync(new URL(name, HEADERS)));
    const reader = readers[name.split('.').pop()!];
    expect(reader(bytes)).toEqual({ kind: 'image', ...pillowSizes[name] });
  });

  it('PNG and JPEG from the test encoders', () => {
    expect(declaredSize(smallPng(), 'png')).toEqual({ kind: 'image', width: 3, height: 2 });
    expect(declaredSize(twoToneJpeg(64, 48, [0, 0, 0], [255, 255, 255]), 'jpeg')).toEqual({ kind: 'image', width: 64, height: 48 });
  });

  it('refuses a header that does not say: a PNG without IHDR, a JPEG that ends before its frame header', () => {
    const png = smallPng().slice();
    png.set([0x58, 0x58, 0x58, 0x58], 12);
    expect(() => declaredSize(png, 'png')).toThrow(expect.objectContaining({ reason: 'decode_failed' }));
    expect(() => declaredSize(new Uint8Array([0xff, 0xd8, 0xff, 0xd9]), 'jpeg')).toThrow(/no frame header/);
    const zeroSize = smallPng().slice();
    zeroSize.set([0, 0, 0, 0], 16);
    expect(() => declaredSize(zeroSize, 'png')).toThrow(/invalid size 0×2/);
  });
});

describe('declared audio durations', () => {
  it('WAV: frames over the rate, the data chunk clipped to the file', () => {
    const wav = pcm16Wav([new Int16Array(1600), new Int16Array(1600)], 8000);
    expect(declaredSize(wav, 'wav')).toEqual({ kind: 'audio', sampleRate: 8000, seconds: 0.2, exact: true });
    // A 1 Hz WAV of 1800 bytes declares half an hour.
    const slow = pcm16Wav([new Int16Array(1800)], 1);
    expect(declaredSize(slow, 'wav')).toEqual({ kind: 'audio', sampleRate: 1, seconds: 1800, exact: true });
    const streamed = wav.slice();
    new DataView(streamed.buffer).setUint32(40, 0xffffffff, true);
    expect(declaredSize(streamed, 'wav')).toEqual({ kind: 'audio', sampleRate: 8000, seconds: 0.2, exact: true });
  });

  it('FLAC: STREAMINFO total samples; unknown (0) stays unknown', () => {
    const flac = verbatimFlac([new Int16Array(22050)], 44100);
    expect(declaredSize(flac, 'flac')).toEqual({ kind: 'audio', sampleRate: 44100, seconds: 0.5, exact: true });
    const unknown = flac.slice();
    unknown.fill(0, 21, 26);
    unknown[21] = flac[21] & 0xf0;
    expect(declaredSize(unknown, 'flac')).toEqual({ kind: 'audio', sampleRate: 44100, seconds: null, exact: true });
  });

  it('MP3: constant bitrate from the first frame, within a frame of the encoded length', () => {
    const encoder = new Mp3Encoder(1, 16000, 32);
    const mp3 = new Uint8Array([...encoder.encodeBuffer(new Int16Array(16000 * 3)), ...encoder.flush()]);
    const declared = declaredSize(mp3, 'mp3');
    expect(declared).toMatchObject({ kind: 'audio', sampleRate: 16000 });
    expect((declared as { seconds: number }).seconds).toBeGreaterThan(2.9);
    expect((declared as { seconds: number }).seconds).toBeLessThan(3.2);
  });
});
