/**
 * The audio-language fixture built by scripts/multimodal/build_audio_fixtures.py (seeded
 * random weights; references computed there with torchaudio, torch and numpy, MP3 decoded
 * by the mpg123 tool).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES } from './fixtures.js';

export const QWEN2_AUDIO_DIR = join(FIXTURES, 'qwen2-audio');
export const AUDIO_DIR = join(FIXTURES, 'audio');
export const AUDIO_NAMES = ['tone-22k.wav', 'chirp-44k.mp3', 'other-16k.wav'] as const;

export interface AudioReferenceGeneration {
  kind: 'chat' | 'generate';
  question?: string;
  audio: string[];
  prompt_text: string;
  prompt_token_ids: number[];
  max_tokens: number;
  token_ids: number[];
  text: string;
  top_logprobs: Array<{ token_id: number; logprob: number }>;
}

export interface AudioReference {
  sampling_rate: number;
  audio: Record<string, { source_rate: number; source_samples: number; samples: number; shape: [number, number]; valid_frames: number; audio_tokens: number }>;
  generations: AudioReferenceGeneration[];
}

export function audioReference(): AudioReference {
  return JSON.parse(readFileSync(join(FIXTURES, 'qwen2-audio-reference.json'), 'utf8')) as AudioReference;
}

export function referenceFeatures(name: string): Float32Array {
  const bytes = readFileSync(join(FIXTURES, `qwen2-audio-features-${name}.f32`));
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

export function audioBytes(name: string): Uint8Array {
  return new Uint8Array(readFileSync(join(AUDIO_DIR, name)));
}

export function audioFormat(name: string): 'wav' | 'mp3' {
  return name.endsWith('.mp3') ? 'mp3' : 'wav';
}

export function audioDataUrl(name: string): string {
  return `data:${audioFormat(name) === 'mp3' ? 'audio/mpeg' : 'audio/wav'};base64,${Buffer.from(audioBytes(name)).toString('base64')}`;
}

/** Token ids for the audio families' markers, for processors built without a tokenizer. */
const MARKER_IDS = new Map([
  ['<|AUDIO|>', 300],
  ['<|audio_bos|>', 301],
  ['<|audio_eos|>', 302],
  ['<|audio|>', 303],
]);
export const markerTokenToId = (token: string): number | undefined => MARKER_IDS.get(token);
