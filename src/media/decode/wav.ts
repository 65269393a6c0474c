/**
 * RIFF/WAVE parser: PCM (8-bit unsigned, 16/24/32-bit signed) and IEEE float (32/64-bit),
 * plain or WAVE_FORMAT_EXTENSIBLE. Channels are averaged to mono. A `data` chunk that
 * claims more bytes than the file has (streamed WAVs write 0xFFFFFFFF) is read to the end
 * of the file.
 */
import { mediaError } from '../errors.js';

const PCM = 1;
const IEEE_FLOAT = 3;
const EXTENSIBLE = 0xfffe;

export interface PcmAudio {
  sampleRate: number;
  /** Mono samples in [-1, 1]. */
  samples: Float32Array;
}

interface WavFormat {
  code: number;
  channels: number;
  sampleRate: number;
  blockAlign: number;
  bitsPerSample: number;
}

function fourCC(view: DataView, offset: number): string {
  return String.fromCharCode(view.getUint8(offset), view.getUint8(offset + 1), view.getUint8(offset + 2), view.getUint8(offset + 3));
}

function parseFmt(view: DataView, offset: number, size: number): WavFormat {
  if (size < 16) throw mediaError('decode_failed', 'the WAV fmt chunk is too short');
  let code = view.getUint16(offset, true);
  if (code === EXTENSIBLE && size >= 40) code = view.getUint16(offset + 24, true); // first bytes of the sub-format GUID
  return {
    code,
    channels: view.getUint16(offset + 2, true),
    sampleRate: view.getUint32(offset + 4, true),
    blockAlign: view.getUint16(offset + 12, true),
    bitsPerSample: view.getUint16(offset + 14, true),
  };
}

function sampleReader(view: DataView, format: WavFormat): (offset: number) => number {
  const { code, bitsPerSample: bits } = format;
  if (code === PCM && bits === 8) return (o) => (view.getUint8(o) - 128) / 128;
  if (code === PCM && bits === 16) return (o) => view.getInt16(o, true) / 32768;
  if (code === PCM && bits === 24) {
    return (o) => ((view.getUint8(o) | (view.getUint8(o + 1) << 8) | (view.getInt8(o + 2) << 16)) / 8388608);
  }
  if (code === PCM && bits === 32) return (o) => view.getInt32(o, true) / 2147483648;
  if (code === IEEE_FLOAT && bits === 32) return (o) => view.getFloat32(o, true);
  if (code === IEEE_FLOAT && bits === 64) return (o) => view.getFloat64(o, true);
  const kind = code === PCM ? 'PCM' : code === IEEE_FLOAT ? 'float' : `format code 0x${code.toString(16)}`;
  throw mediaError('unsupported_codec', `WAV ${kind} with ${bits} bits per sample is not supported (PCM 8/16/24/32-bit and float 32/64-bit are)`);
}

export function decodeWav(bytes: Uint8Array, maxSeconds: number): PcmAudio {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 12 || fourCC(view, 0) !== 'RIFF' || fourCC(view, 8) !== 'WAVE') {
    throw mediaError('decode_failed', 'not a RIFF/WAVE file');
  }
  let format: WavFormat | undefined;
  let offset = 12;
  while (offset + 8 <= bytes.length) {
    const id = fourCC(view, offset);
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    if (id === 'fmt ') format = parseFmt(view, body, Math.min(size, bytes.length - body));
    if (id === 'data') {
      if (format === undefined) throw mediaError('decode_failed', 'the WAV data chunk comes before its fmt chunk');
      return readSamples(view, format, body, Math.min(size, bytes.length - body), maxSeconds);
    }
    offset = body + size + (size & 1);
  }
  throw mediaError('decode_failed', format === undefined ? 'the WAV has no fmt chunk' : 'the WAV has no data chunk');
}

function readSamples(view: DataView, format: WavFormat, start: number, length: number, maxSeconds: number): PcmAudio {
  const { channels, sampleRate, blockAlign, bitsPerSample } = format;
  if (channels === 0 || sampleRate === 0 || sampleRate > 768_000) {
    throw mediaError('decode_failed', `the WAV declares ${channels} channels at ${sampleRate} Hz`);
  }
  const bytesPerSample = bitsPerSample / 8;
  if (!Number.isInteger(bytesPerSample) || blockAlign !== bytesPerSample * channels) {
    throw mediaError('decode_failed', `the WAV block size ${blockAlign} does not match ${channels} × ${bitsPerSample}-bit samples`);
  }
  const read = sampleReader(view, format);
  const frames = Math.floor(length / blockAlign);
  if (frames / sampleRate > maxSeconds) {
    throw mediaError('too_large', `the audio lasts ${(frames / sampleRate).toFixed(1)} s, more than the ${maxSeconds} s limit`);
  }
  const samples = new Float32Array(frames);
  for (let i = 0; i < frames; i++) {
    let sum = 0;
    const frame = start + i * blockAlign;
    for (let c = 0; c < channels; c++) sum += read(frame + c * bytesPerSample);
    samples[i] = sum / channels;
  }
  return { sampleRate, samples };
}
