/**
 * The Whisper feature extractor and the audio families' prompt rules against the
 * references of scripts/multimodal/build_audio_fixtures.py (torchaudio resampling,
 * torch.stft log-mel) and the processors' published formulas.
 */
import { describe, expect, it } from 'vitest';
import { decodeAudio } from '../../src/media/decode/audio.js';
import { Fft, RealFft } from '../../src/multimodal/audio/fft.js';
import { slaneyMelFilters, WhisperFeatureExtractor, whisperFeatureSettings } from '../../src/multimodal/audio/whisper-features.js';
import { qwen2AudioTokens, Qwen2AudioProcessor } from '../../src/multimodal/processors/qwen2-audio.js';
import { ultravoxAudioTokens, UltravoxProcessor } from '../../src/multimodal/processors/ultravox.js';
import { AUDIO_NAMES, audioBytes, audioFormat, audioReference, markerTokenToId, QWEN2_AUDIO_DIR, referenceFeatures } from './audio-fixtures.js';
import { readJson } from './fixtures.js';
import { join } from 'node:path';

const expected = audioReference();
const preprocessor = readJson(join(QWEN2_AUDIO_DIR, 'preprocessor_config.json'));

function maxDifference(a: Float32Array, b: Float32Array): number {
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - b[i]));
  return max;
}

describe('Whisper log-mel features', () => {
  const extractor = new WhisperFeatureExtractor(whisperFeatureSettings(preprocessor));

  it('read every setting from preprocessor_config.json', () => {
    expect(extractor.settings).toEqual({ featureSize: 64, samplingRate: 16000, hopLength: 160, nFft: 400, chunkLength: 4, nSamples: 64000, nbMaxFrames: 400 });
    expect(() => whisperFeatureSettings({ ...preprocessor, dither: 0.1 })).toThrow(/"dither" other than 0/);
  });

  for (const name of AUDIO_NAMES) {
    it(`${name} (${expected.audio[name].source_rate} Hz, ${expected.audio[name].source_samples} samples): resampled, padded features equal the reference`, async () => {
      const audio = await decodeAudio(audioBytes(name), audioFormat(name), { sampleRate: 16000, maxSeconds: 60 });
      expect(audio.sourceSampleRate).toBe(expected.audio[name].source_rate);
      expect(audio.samples.length).toBe(expected.audio[name].samples);
      const { features, frames, validFrames } = extractor.extract(audio.samples, extractor.settings.nSamples);
      expect([64, frames]).toEqual(expected.audio[name].shape);
      expect(validFrames).toBe(expected.audio[name].valid_frames);
      // Within float32 rounding of the resampler and the MP3 decoder; a wrong window,
      // filter bank or frame alignment is off by 0.1 or more.
      expect(maxDifference(features, referenceFeatures(name))).toBeLessThan(2e-4);
    });
  }

  it('the mixed-radix FFT equals a direct DFT for n_fft 400', () => {
    const n = 400;
    const re = Float64Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) + (i % 7) / 7);
    const im = new Float64Array(n);
    const outRe = new Float64Array(n);
    const outIm = new Float64Array(n);
    new Fft(n).transform(re, im, outRe, outIm);
    for (const k of [0, 1, 13, 200, 399]) {
      let sr = 0;
      let si = 0;
      for (let j = 0; j < n; j++) {
        sr += re[j] * Math.cos((2 * Math.PI * j * k) / n);
        si -= re[j] * Math.sin((2 * Math.PI * j * k) / n);
      }
      expect(outRe[k]).toBeCloseTo(sr, 9);
      expect(outIm[k]).toBeCloseTo(si, 9);
    }
    // The real-input transform (one 200-point FFT) gives the same bins 0..200.
    const realRe = new Float64Array(n / 2 + 1);
    const realIm = new Float64Array(n / 2 + 1);
    new RealFft(n).transform(re, realRe, realIm);
    for (let k = 0; k <= n / 2; k++) {
      expect(realRe[k]).toBeCloseTo(outRe[k], 9);
      expect(realIm[k]).toBeCloseTo(outIm[k], 9);
    }
  });

  it('the Slaney filter bank has unit-area-normalised triangles up to 8 kHz', () => {
    const filters = slaneyMelFilters(201, 80, 16000);
    // Slaney normalisation: each triangle's peak is 2 / (its width in Hz).
    const peaks = filters.map((filter) => Math.max(...filter));
    expect(peaks[0]).toBeGreaterThan(peaks[79]);
    expect(filters[79][200]).toBe(0);
    expect(filters.every((filter) => filter.some((value) => value > 0))).toBe(true);
  });

  it('audio shorter than half an FFT window is refused, not read out of bounds', () => {
    expect(() => extractor.extract(new Float32Array(150), null)).toThrow(/too short/);
  });
});

describe('audio prompt rules', () => {
  const tokenToId = markerTokenToId;

  it('Qwen2-Audio: ((frames - 1) // 2 + 1 - 2) // 2 + 1 tokens, bos/eos added only around a bare placeholder', () => {
    expect(qwen2AudioTokens(3000)).toBe(750);
    expect(qwen2AudioTokens(100)).toBe(25);
    expect(qwen2AudioTokens(138)).toBe(34);
    for (const name of AUDIO_NAMES) expect(qwen2AudioTokens(expected.audio[name].valid_frames)).toBe(expected.audio[name].audio_tokens);
    const processor = Qwen2AudioProcessor.create({ config: {}, preprocessorConfig: preprocessor }, tokenToId);
    const audio = processor.process({ kind: 'audio', sampleRate: 16000, samples: new Float32Array(16000), sourceSampleRate: 16000 }, 'p');
    expect(audio.validFrames).toBe(100);
    expect(processor.expansion(audio, 'x<|audio_bos|>', '<|audio_eos|>')).toBe('<|AUDIO|>'.repeat(25));
    expect(processor.expansion(audio, 'x', 'y')).toBe(`<|audio_bos|>${'<|AUDIO|>'.repeat(25)}<|audio_eos|>`);
    expect(() => Qwen2AudioProcessor.create({ config: { audio_token_index: 7 }, preprocessorConfig: preprocessor }, tokenToId)).toThrow(
      /"audio_token_index" is 7, but the tokenizer's "<\|AUDIO\|>" is 300/,
    );
  });

  it("Ultravox: 1 + ceil(round(samples / 320 + 1e-4) / 8) placeholders, features as long as the audio", () => {
    expect(ultravoxAudioTokens(16000, 320, 8)).toBe(8);
    expect(ultravoxAudioTokens(16160, 320, 8)).toBe(1 + Math.ceil(51 / 8));
    expect(ultravoxAudioTokens(480000, 320, 8)).toBe(189);
    const processor = UltravoxProcessor.create(
      { config: {}, preprocessorConfig: preprocessor, processorConfig: { audio_placeholder: '<|audio|>', encoder_ds_factor: 320, stack_factor: 8 } },
      tokenToId,
    );
    const audio = processor.process({ kind: 'audio', sampleRate: 16000, samples: new Float32Array(20_001).fill(0.1), sourceSampleRate: 16000 }, 'p');
    expect(audio.frames).toBe(125);
    expect(audio.audioTokens).toBe(1 + Math.ceil(63 / 8));
    expect(processor.expansion(audio)).toBe('<|audio|>'.repeat(9));
    expect(processor.contentFormat).toBe('string');
  });
});
