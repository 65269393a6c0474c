/**
 * MP3 (mpg123-decoder) and FLAC (@wasm-audio-decoders/flac): libmpg123 and libFLAC
 * compiled to WASM, which run in Node and browsers. workerd forbids compiling WASM at
 * run time, which these packages do, so there only WAV decodes (docs/media.md).
 *
 * The input is fed in slices and decoding stops once the audio passes `maxSeconds`: a
 * 40 MB file at a low bitrate can hold hours of audio, whose PCM would not fit in memory.
 * The decoders are imported on first use so a text-only server never loads them.
 */
import { mediaError } from '../errors.js';
import type { PcmAudio } from './wav.js';

const SLICE_BYTES = 256 * 1024;

interface DecodedChunk {
  channelData: Float32Array[];
  samplesDecoded: number;
  sampleRate: number;
  errors: { message: string }[];
  /** FLAC only: bits per sample of the source. */
  bitDepth?: number;
}

interface StreamDecoder {
  decode(chunk: Uint8Array): DecodedChunk | Promise<DecodedChunk>;
  flush?(): Promise<DecodedChunk>;
  free(): void;
}

/** Mono mix of decoded chunks, bounded by `maxSeconds`. */
class MonoCollector {
  private readonly parts: Float32Array[] = [];
  private total = 0;
  sampleRate = 0;
  errors: string[] = [];

  constructor(
    private readonly label: string,
    private readonly maxSeconds: number,
  ) {}

  add(chunk: DecodedChunk): void {
    for (const error of chunk.errors) this.errors.push(error.message);
    if (chunk.samplesDecoded === 0) return;
    if (this.sampleRate === 0) this.sampleRate = chunk.sampleRate;
    else if (chunk.sampleRate !== this.sampleRate) {
      throw mediaError('decode_failed', `the ${this.label} changes sample rate mid-stream (${this.sampleRate} → ${chunk.sampleRate} Hz)`);
    }
    this.total += chunk.samplesDecoded;
    if (this.total / this.sampleRate > this.maxSeconds) {
      throw mediaError('too_large', `the audio lasts more than the ${this.maxSeconds} s limit`);
    }
    const mono = new Float32Array(chunk.samplesDecoded);
    for (const channel of chunk.channelData) for (let i = 0; i < mono.length; i++) mono[i] += channel[i];
    // The FLAC decoder divides integer samples by 2^(b-1) - 1; WAV (and libsndfile) use
    // 2^(b-1), so -32768 is exactly -1. Rescale to that convention.
    const integerScale = chunk.bitDepth !== undefined && chunk.bitDepth > 1 ? (2 ** (chunk.bitDepth - 1) - 1) / 2 ** (chunk.bitDepth - 1) : 1;
    const scale = integerScale / chunk.channelData.length;
    for (let i = 0; i < mono.length; i++) mono[i] *= scale;
    this.parts.push(mono);
  }

  result(): PcmAudio {
    if (this.total === 0) {
      const why = this.errors.length > 0 ? `: ${this.errors[0]}` : '';
      throw mediaError('decode_failed', `the ${this.label} contains no decodable audio${why}`);
    }
    const samples = new Float32Array(this.total);
    let offset = 0;
    for (const part of this.parts) {
      samples.set(part, offset);
      offset += part.length;
    }
    return { sampleRate: this.sampleRate, samples };
  }
}

async function decodeStream(label: string, decoder: StreamDecoder, bytes: Uint8Array, maxSeconds: number): Promise<PcmAudio> {
  const collector = new MonoCollector(label, maxSeconds);
  try {
    for (let offset = 0; offset < bytes.length; offset += SLICE_BYTES) {
      collector.add(await decoder.decode(bytes.subarray(offset, offset + SLICE_BYTES)));
    }
    if (decoder.flush !== undefined) collector.add(await decoder.flush());
  } finally {
    decoder.free();
  }
  return collector.result();
}

/** A ready decoder, or a 400 saying this runtime cannot run it (workerd: no run-time WASM compilation). */
async function startDecoder<T extends { ready: Promise<void> }>(label: string, create: () => Promise<T>): Promise<T> {
  try {
    const decoder = await create();
    await decoder.ready;
    return decoder;
  } catch (error) {
    throw mediaError('unsupported_codec', `${label} decoding is not available in this runtime (${(error as Error).message})`);
  }
}

export async function decodeMp3(bytes: Uint8Array, maxSeconds: number): Promise<PcmAudio> {
  const decoder = await startDecoder('MP3', async () => new (await import('mpg123-decoder')).MPEGDecoder());
  return decodeStream('MP3', decoder, bytes, maxSeconds);
}

export async function decodeFlac(bytes: Uint8Array, maxSeconds: number): Promise<PcmAudio> {
  const decoder = await startDecoder('FLAC', async () => new (await import('@wasm-audio-decoders/flac')).FLACDecoder());
  return decodeStream('FLAC', decoder, bytes, maxSeconds);
}
