/**
 * Audio decodes to mono PCM at the target rate: exact sample values for PCM WAV and
 * FLAC (lossless), the right tone for MP3 (lossy), and a resampler that keeps tones
 * below the new Nyquist frequency and removes those above it.
 */
import { Mp3Encoder } from '@breezystack/lamejs';
import { describe, expect, it } from 'vitest';
import { decodeAudio } from '../../src/media/decode/audio.js';
import { resample } from '../../src/media/decode/resample.js';
import { decodeWav } from '../../src/media/decode/wav.js';
import { verbatimFlac } from './helpers/flac-writer.js';
import { pcm16Wav } from './helpers/fixtures.js';

function tone(freq: number, rate: number, seconds: number, amplitude = 1): Float32Array {
  return Float32Array.from({ length: Math.round(rate * seconds) }, (_, i) => amplitude * Math.sin((2 * Math.PI * freq * i) / rate));
}

/** Amplitude of a sine in the middle 60% of `x` (edges see the zero padding). */
function amplitude(x: Float32Array): number {
  let sum = 0;
  let count = 0;
  for (let i = Math.floor(x.length * 0.2); i < x.length * 0.8; i++, count++) sum += x[i] * x[i];
  return Math.sqrt((2 * sum) / count);
}

/** Goertzel power at `freq`, normalised so a unit sine gives ~1. */
function powerAt(x: Float32Array, freq: number, rate: number): number {
  let re = 0;
  let im = 0;
  for (let i = 0; i < x.length; i++) {
    re += x[i] * Math.cos((2 * Math.PI * freq * i) / rate);
    im -= x[i] * Math.sin((2 * Math.PI * freq * i) / rate);
  }
  return (2 * Math.hypot(re, im)) / x.length;
}

const toInt16 = (x: Float32Array) => Int16Array.from(x, (v) => Math.round(v * 32767));

describe('WAV', () => {
  it('decodes 16-bit stereo PCM to the mean of the channels, scaled by 1/32768', async () => {
    const left = new Int16Array([0, 16384, -16384, 32767, -32768]);
    const right = new Int16Array([0, 0, 16384, -32768, -32768]);
    const audio = await decodeAudio(pcm16Wav([left, right], 16000), 'wav', { sampleRate: 16000, maxSeconds: 60 });
    expect(audio.sampleRate).toBe(16000);
    expect(audio.sourceSampleRate).toBe(16000);
    expect(Array.from(audio.samples)).toEqual([0, 0.25, 0, -0.5 / 32768, -1]);
  });

  it('reads 24-bit PCM and 32-bit float, and skips chunks before the data', () => {
    // fmt (24-bit mono, 8 kHz), a LIST chunk of odd size (padded), then data.
    const bytes = [
      ...'RIFF', 0, 0, 0, 0, ...'WAVE',
      ...'fmt ', 16, 0, 0, 0, 1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0xc0, 0x5d, 0, 0, 3, 0, 24, 0,
      ...'LIST', 3, 0, 0, 0, 1, 2, 3, 0,
      ...'data', 6, 0, 0, 0, 0x00, 0x00, 0x40, 0xff, 0xff, 0xff,
    ].map((b) => (typeof b === 'string' ? b.charCodeAt(0) : b));
    const pcm24 = decodeWav(new Uint8Array(bytes), 60);
    expect(pcm24.sampleRate).toBe(8000);
    expect(Array.from(pcm24.samples)).toEqual([0.5, -1 / 8388608]);

    const floats = new Float32Array([0.125, -0.75]);
    const header = [...'RIFF', 0, 0, 0, 0, ...'WAVE', ...'fmt ', 16, 0, 0, 0, 3, 0, 1, 0, 0x80, 0x3e, 0, 0, 0, 0xfa, 0, 0, 4, 0, 32, 0, ...'data', 8, 0, 0, 0];
    const wav = new Uint8Array([...header.map((b) => (typeof b === 'string' ? b.charCodeAt(0) : b)), ...new Uint8Array(floats.buffer)]);
    expect(Array.from(decodeWav(wav, 60).samples)).toEqual([0.125, -0.75]);
  });

  it('resamples a 48 kHz 440 Hz tone to 16 kHz', async () => {
    const wav = pcm16Wav([toInt16(tone(440, 48000, 0.5, 0.5))], 48000);
    const audio = await decodeAudio(wav, 'wav', { sampleRate: 16000, maxSeconds: 60 });
    expect(audio.samples.length).toBe(8000);
    expect(audio.sourceSampleRate).toBe(48000);
    for (const n of [2000, 3001, 4500]) expect(audio.samples[n]).toBeCloseTo(0.5 * Math.sin((2 * Math.PI * 440 * n) / 16000), 3);
  });

  it('refuses audio longer than the limit and unsupported sample formats', async () => {
    const wav = pcm16Wav([new Int16Array(16000 * 3)], 16000);
    await expect(decodeAudio(wav, 'wav', { sampleRate: 16000, maxSeconds: 2 })).rejects.toMatchObject({ reason: 'too_large' });
    const alaw = pcm16Wav([new Int16Array(4)], 8000);
    alaw[20] = 6; // format code 6: A-law
    await expect(decodeAudio(alaw, 'wav', { sampleRate: 16000, maxSeconds: 60 })).rejects.toMatchObject({ reason: 'unsupported_codec' });
  });
});

describe('resampler', () => {
  it('keeps tones below the new Nyquist frequency and the DC level', () => {
    expect(amplitude(resample(tone(1000, 48000, 1), 48000, 16000))).toBeCloseTo(1, 2);
    expect(amplitude(resample(tone(1000, 44100, 1), 44100, 16000))).toBeCloseTo(1, 2);
    expect(amplitude(resample(tone(1000, 8000, 1), 8000, 16000))).toBeCloseTo(1, 2);
    expect(resample(new Float32Array(4800).fill(0.5), 48000, 16000)[800]).toBeCloseTo(0.5, 3);
  });

  it('removes a 10 kHz tone when going to 16 kHz instead of folding it to 6 kHz', () => {
    const out = resample(tone(10000, 48000, 1), 48000, 16000);
    expect(amplitude(out)).toBeLessThan(0.01);
    expect(powerAt(out, 6000, 16000)).toBeLessThan(0.01);
  });
});

describe('FLAC', () => {
  it('decodes a lossless FLAC to its exact sample values, mixed to mono', async () => {
    const left = Int16Array.from({ length: 3000 }, (_, i) => ((i * 37) % 2000) - 1000);
    const right = Int16Array.from({ length: 3000 }, (_, i) => (i % 2 === 0 ? 500 : -500));
    const audio = await decodeAudio(verbatimFlac([left, right], 16000, 1024), 'flac', { sampleRate: 16000, maxSeconds: 60 });
    expect(audio.sourceSampleRate).toBe(16000);
    expect(audio.samples.length).toBe(3000);
    for (const i of [0, 1, 999, 1024, 2047, 2999]) expect(audio.samples[i]).toBeCloseTo((left[i] + right[i]) / 2 / 32768, 6);
  });

  it('refuses a FLAC with no decodable frames', async () => {
    const header = verbatimFlac([new Int16Array(10)], 16000).subarray(0, 42);
    await expect(decodeAudio(header, 'flac', { sampleRate: 16000, maxSeconds: 60 })).rejects.toMatchObject({ reason: 'decode_failed' });
  });
});

describe('MP3', () => {
  it('decodes an MP3 of a 1 kHz tone at 44.1 kHz to a 1 kHz tone at 16 kHz', async () => {
    const encoder = new Mp3Encoder(1, 44100, 128);
    const pcm = toInt16(tone(1000, 44100, 1, 0.5));
    const mp3 = new Uint8Array([...encoder.encodeBuffer(pcm), ...encoder.flush()]);
    const audio = await decodeAudio(mp3, 'mp3', { sampleRate: 16000, maxSeconds: 60 });
    expect(audio.sourceSampleRate).toBe(44100);
    // The codec adds a little delay and padding around the second of audio.
    expect(audio.samples.length).toBeGreaterThan(15000);
    expect(audio.samples.length).toBeLessThan(17500);
    const middle = audio.samples.subarray(4000, 12000);
    expect(powerAt(middle, 1000, 16000)).toBeCloseTo(0.5, 1);
    expect(powerAt(middle, 3000, 16000)).toBeLessThan(0.02);
  });

  it('stops decoding once the audio passes the duration limit', async () => {
    const encoder = new Mp3Encoder(1, 16000, 32);
    const mp3 = new Uint8Array([...encoder.encodeBuffer(new Int16Array(16000 * 3)), ...encoder.flush()]);
    await expect(decodeAudio(mp3, 'mp3', { sampleRate: 16000, maxSeconds: 1 })).rejects.toMatchObject({ reason: 'too_large' });
  });
});
