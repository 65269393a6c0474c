/**
 * Log-mel features exactly as transformers' WhisperFeatureExtractor computes them, from
 * preprocessor_config.json: the waveform cut or zero-padded to `padTo` samples (the
 * family decides: Qwen2-Audio pads to n_samples = chunk_length × sampling_rate, Ultravox
 * takes the audio as long as it is); a centred STFT (reflect padding of n_fft / 2, periodic
 * Hann window, hop_length); the power spectrum through the Slaney-normalised,
 * Slaney-scale mel filter bank over 0–8000 Hz (feature_size filters); log10 of it clamped
 * to 1e-10; the last frame dropped; everything below (its maximum − 8) raised to it; and
 * (x + 4) / 4. The audio must already be at sampling_rate.
 */
import { configError, numberField, positiveIntField, type JsonObject } from '../config-fields.js';
import { RealFft } from './fft.js';

export interface WhisperFeatureSettings {
  featureSize: number;
  samplingRate: number;
  hopLength: number;
  nFft: number;
  chunkLength: number;
  /** chunk_length × sampling_rate (transformers recomputes it so, whatever the file says). */
  nSamples: number;
  /** nSamples / hopLength: the frames of a padded window. */
  nbMaxFrames: number;
}

export function whisperFeatureSettings(config: JsonObject, file = 'preprocessor_config.json'): WhisperFeatureSettings {
  const featureSize = positiveIntField(config, 'feature_size', 80, file);
  const samplingRate = positiveIntField(config, 'sampling_rate', 16000, file);
  const hopLength = positiveIntField(config, 'hop_length', 160, file);
  const nFft = positiveIntField(config, 'n_fft', 400, file);
  const chunkLength = positiveIntField(config, 'chunk_length', 30, file);
  // Dither adds random noise to every extraction: features would not be reproducible.
  if (numberField(config, 'dither', 0, file) !== 0) throw configError(file, '"dither" other than 0 is not supported (features would be random).');
  if (numberField(config, 'padding_value', 0, file) !== 0) throw configError(file, '"padding_value" other than 0 is not supported.');
  if (nFft % 2 !== 0) throw configError(file, `"n_fft" must be even, got ${nFft}`);
  const nSamples = chunkLength * samplingRate;
  return { featureSize, samplingRate, hopLength, nFft, chunkLength, nSamples, nbMaxFrames: Math.floor(nSamples / hopLength) };
}

/** Slaney's mel scale: linear below 1 kHz, logarithmic above. */
function hertzToMel(hertz: number): number {
  if (hertz < 1000) return (3 * hertz) / 200;
  return 15 + Math.log(hertz / 1000) * (27 / Math.log(6.4));
}

function melToHertz(mel: number): number {
  if (mel < 15) return (200 * mel) / 3;
  return 1000 * Math.exp((Math.log(6.4) / 27) * (mel - 15));
}

/** [mels][bins] triangular filters, Slaney area normalisation (transformers' mel_filter_bank, norm and scale "slaney"). */
export function slaneyMelFilters(bins: number, mels: number, samplingRate: number, minHertz = 0, maxHertz = 8000): Float64Array[] {
  const low = hertzToMel(minHertz);
  const high = hertzToMel(maxHertz);
  const edges = Array.from({ length: mels + 2 }, (_, i) => melToHertz(low + ((high - low) * i) / (mels + 1)));
  const nyquist = Math.floor(samplingRate / 2);
  const binHertz = (k: number) => (bins === 1 ? 0 : (nyquist * k) / (bins - 1));
  return Array.from({ length: mels }, (_, m) => {
    const filter = new Float64Array(bins);
    const norm = 2 / (edges[m + 2] - edges[m]);
    for (let k = 0; k < bins; k++) {
      const f = binHertz(k);
      const down = (f - edges[m]) / (edges[m + 1] - edges[m]);
      const up = (edges[m + 2] - f) / (edges[m + 2] - edges[m + 1]);
      filter[k] = Math.max(0, Math.min(down, up)) * norm;
    }
    return filter;
  });
}

export interface LogMelFeatures {
  /** [featureSize, frames], row-major (a mel band's frames are contiguous), as input_features. */
  features: Float32Array;
  frames: number;
  /** Frames of real audio: ceil(samples / hop_length), as the feature attention mask counts them. */
  validFrames: number;
}

/** torch/numpy "reflect" padding: index −1 reads 1, index n reads n − 2. */
function reflect(index: number, length: number): number {
  if (length === 1) return 0;
  const period = 2 * (length - 1);
  let i = ((index % period) + period) % period;
  if (i >= length) i = period - i;
  return i;
}

export class WhisperFeatureExtractor {
  private readonly filters: Array<{ first: number; weights: Float64Array }>;
  private readonly window: Float64Array;
  private readonly fft: RealFft;

  constructor(readonly settings: WhisperFeatureSettings) {
    const bins = settings.nFft / 2 + 1;
    // Each filter keeps only its non-zero span: the mel product skips the zeros.
    this.filters = slaneyMelFilters(bins, settings.featureSize, settings.samplingRate).map((filter) => {
      let first = filter.findIndex((value) => value !== 0);
      if (first < 0) first = 0;
      let last = filter.length - 1;
      while (last > first && filter[last] === 0) last--;
      return { first, weights: filter.slice(first, last + 1) };
    });
    // Periodic Hann (torch.hann_window, transformers' window_function "hann").
    this.window = Float64Array.from({ length: settings.nFft }, (_, j) => 0.5 - 0.5 * Math.cos((2 * Math.PI * j) / settings.nFft));
    this.fft = new RealFft(settings.nFft);
  }

  /**
   * `padTo`: cut or zero-pad the waveform to that many samples first (null: as it is, the
   * frames then capped at nbMaxFrames as transformers.js does for Ultravox).
   */
  extract(samples: Float32Array, padTo: number | null): LogMelFeatures {
    const { nFft, hopLength, featureSize, nbMaxFrames } = this.settings;
    const kept = padTo === null ? samples.length : Math.min(samples.length, padTo);
    const length = padTo ?? samples.length;
    if (length <= nFft / 2) throw new Error(`audio of ${length} samples is too short for a ${nFft}-point STFT`);
    const frames = padTo === null ? Math.min(Math.floor(length / hopLength), nbMaxFrames) : Math.floor(length / hopLength);
    const at = (index: number) => {
      const i = reflect(index, length);
      return i < kept ? samples[i] : 0;
    };
    const bins = nFft / 2 + 1;
    const frame = new Float64Array(nFft);
    const outRe = new Float64Array(bins);
    const outIm = new Float64Array(bins);
    const power = new Float64Array(bins);
    const logMel = new Float64Array(featureSize * frames);
    let max = -Infinity;
    const half = nFft / 2;
    for (let t = 0; t < frames; t++) {
      const start = t * hopLength - half;
      for (let j = 0; j < nFft; j++) {
        const index = start + j;
        const value = index >= 0 && index < kept ? samples[index] : at(index);
        frame[j] = value * this.window[j];
      }
      this.fft.transform(frame, outRe, outIm);
      for (let k = 0; k < bins; k++) power[k] = outRe[k] * outRe[k] + outIm[k] * outIm[k];
      for (let m = 0; m < featureSize; m++) {
        const { first, weights } = this.filters[m];
        let sum = 0;
        for (let k = 0; k < weights.length; k++) sum += weights[k] * power[first + k];
        const value = Math.log10(Math.max(sum, 1e-10));
        logMel[m * frames + t] = value;
        if (value > max) max = value;
      }
    }
    const floor = max - 8;
    const features = new Float32Array(logMel.length);
    for (let i = 0; i < logMel.length; i++) features[i] = (Math.max(logMel[i], floor) + 4) / 4;
    return { features, frames, validFrames: Math.min(frames, Math.ceil(kept / hopLength)) };
  }
}
