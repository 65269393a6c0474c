/**
 * WAV, MP3 and FLAC → mono Float32 PCM at the configured sample rate.
 */
import type { DecodedAudio } from '../types.js';
import { decodeFlac, decodeMp3 } from './compressed-audio.js';
import { resample } from './resample.js';
import { decodeWav, type PcmAudio } from './wav.js';

export interface AudioOptions {
  sampleRate: number;
  maxSeconds: number;
}

export async function decodeAudio(bytes: Uint8Array, format: 'wav' | 'mp3' | 'flac', options: AudioOptions): Promise<DecodedAudio> {
  let pcm: PcmAudio;
  if (format === 'wav') pcm = decodeWav(bytes, options.maxSeconds);
  else if (format === 'mp3') pcm = await decodeMp3(bytes, options.maxSeconds);
  else pcm = await decodeFlac(bytes, options.maxSeconds);
  return {
    kind: 'audio',
    sampleRate: options.sampleRate,
    samples: resample(pcm.samples, pcm.sampleRate, options.sampleRate),
    sourceSampleRate: pcm.sampleRate,
  };
}
