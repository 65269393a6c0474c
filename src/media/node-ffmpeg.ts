/**
 * Video decoding under Node with the ffmpeg binary that ships inside an npm package
 * (@ffmpeg-installer/ffmpeg and its platform package; README, dependencies). Every codec
 * its build has: H.264, H.265/HEVC, AV1 (libaom), VP8, VP9, MPEG-4 Part 2, Motion JPEG,
 * Windows Media Video 7/8/9 and VC-1, in MP4/MOV, AVI, ASF/WMV and WebM/Matroska.
 *
 * ffmpeg runs as a child process, so a decoder crash on a hostile file kills only that
 * process, and a stuck one is killed at the deadline. The bytes go in on stdin (no
 * temporary file: an MP4 with its index at the end is reordered in memory first, see
 * mp4-faststart.ts), the demuxer is forced to the container the magic bytes named, and
 * only the pipe protocol is allowed, so a file cannot make ffmpeg open anything else.
 *
 * Two passes over the same decode: the first lists every frame (framecrc: count, times,
 * size) so the sampling rule can pick frames; the second outputs only the picked frames
 * as RGB24 at the first frame's size.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { createRequire } from 'node:module';
import { mediaError, MediaError } from './errors.js';
import { sampleFrames } from './decode/frame-sampling.js';
import { mp4WithMoovFirst } from './decode/mp4-faststart.js';
import type { VideoDecoderBackend, VideoFormat, VideoOptions } from './decode/video.js';
import type { DecodedImage, DecodedVideo } from './types.js';

/** ffmpeg's demuxer for each sniffed container. */
const DEMUXERS: Record<VideoFormat, string> = { mp4: 'mov', avi: 'avi', wmv: 'asf', webm: 'matroska' };
const FORMAT_NAMES: Record<VideoFormat, string> = { mp4: 'MP4', avi: 'AVI', wmv: 'WMV', webm: 'WebM' };

/** The frame list of a long video is ~60 bytes a frame: 64 MiB is over a million frames. */
const MAX_FRAME_LIST_BYTES = 64 * 1024 * 1024;
/** ffmpeg's largest single allocation (-max_alloc): a 40-megapixel RGB frame fits. */
const MAX_ALLOC_BYTES = 256 * 1024 * 1024;
const STDERR_TAIL = 4096;

export interface FfmpegVideoDecoderOptions {
  /** The ffmpeg executable. */
  ffmpegPath: string;
  /** Both passes of one video together (MEDIA_VIDEO_DECODE_TIMEOUT_MS). */
  timeoutMs: number;
  /** ffmpeg processes at once; more videos wait their turn. */
  maxConcurrent?: number;
}

/** The ffmpeg inside @ffmpeg-installer's platform package; null where none is installed or it is not executable. */
export function bundledFfmpegPath(): string | null {
  try {
    const require = createRequire(import.meta.url);
    const { path } = require('@ffmpeg-installer/ffmpeg') as { path: string };
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return null;
  }
}

interface RunResult {
  code: number | null;
  stdout: Uint8Array;
  /** ffmpeg's error lines (the tail). */
  errors: string;
  /** Set when this side ended the process. */
  stopped?: 'timeout' | 'output' | 'frame_size';
}

interface RunOptions {
  args: string[];
  input: Uint8Array;
  /** More output than this stops the process. */
  maxStdout: number;
  /** Output of exactly this size is expected: written into one buffer, not gathered in chunks. */
  exactStdout?: boolean;
  deadline: number;
  signal?: AbortSignal;
  /** Each informational line as it arrives; true stops the process (the frame size is too large). */
  refuseOnInfo?: (line: string) => boolean;
}

function run(ffmpegPath: string, options: RunOptions): Promise<RunResult> {
  const { signal } = options;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    // -loglevel level+...: every line tagged [info], [error], ... (metadata cannot forge a tag at a line start).
    const child = spawn(ffmpegPath, options.args, { stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
    const exact = options.exactStdout ? Buffer.allocUnsafe(options.maxStdout) : null;
    const chunks: Buffer[] = [];
    let stdoutBytes = 0;
    let errors = '';
    let partial = '';
    let stopped: RunResult['stopped'];
    const stop = (why: NonNullable<RunResult['stopped']>) => {
      stopped ??= why;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => stop('timeout'), Math.max(1, options.deadline - Date.now()));
    const onAbort = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdoutBytes + chunk.length > options.maxStdout) return stop('output');
      if (exact !== null) chunk.copy(exact, stdoutBytes);
      else chunks.push(chunk);
      stdoutBytes += chunk.length;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop()!.slice(-STDERR_TAIL);
      for (const line of lines) {
        const tagged = /^(?:\[[^\]]*\] )?\[(\w+)\] (.*)$/.exec(line);
        if (tagged === null) continue;
        if (tagged[1] === 'info') {
          if (options.refuseOnInfo?.(tagged[2]) === true) stop('frame_size');
        } else if (tagged[1] === 'error' || tagged[1] === 'fatal' || tagged[1] === 'panic') {
          errors = `${errors}\n${line}`.slice(-STDERR_TAIL);
        }
      }
    });
    // ffmpeg may stop reading early (it found what it needed, or gave up): not an error here.
    child.stdin.on('error', () => {});
    child.on('error', (error) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      reject(mediaError('decode_failed', `the video decoder could not be started (${error.message})`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (signal?.aborted) return reject(signal.reason);
      const stdout = exact !== null ? exact.subarray(0, stdoutBytes) : Buffer.concat(chunks);
      resolve({ code, stdout, errors, stopped });
    });
    const { input } = options;
    child.stdin.end(Buffer.from(input.buffer, input.byteOffset, input.byteLength));
  });
}

/** ffmpeg's last complaint, for the 400 (it names the file as pipe:0, nothing of the server). */
function lastError(errors: string): string {
  const lines = errors.split('\n').map((line) => line.replace(/^(\[[^\]]*\] )?\[\w+\] /, '').trim()).filter((line) => line !== '');
  // Printable ASCII only: the message goes back to the client, and a file can put anything in it.
  const line = (lines.at(-1) ?? 'no frames').replace(/[^\x20-\x7e]/g, '?');
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** The input video stream's frame size from ffmpeg's stream line ("Stream #0:0(und): Video: h264 …, 320x240 …"). */
export function streamFrameSize(line: string): { width: number; height: number } | null {
  const stream = /^\s*Stream #0:\d+.*?: Video: (.*)$/.exec(line);
  if (stream === null) return null;
  const size = /, (\d+)x(\d+)/.exec(stream[1]);
  return size === null ? null : { width: Number(size[1]), height: Number(size[2]) };
}

interface FrameList {
  width: number;
  height: number;
  /** Seconds, in output (presentation) order. */
  times: number[];
  /** Seconds each frame lasts. */
  durations: number[];
}

/** framecrc output: "#tb 0: 1/30", "#dimensions 0: 320x240", then "0, dts, pts, duration, size, crc" per frame. */
export function parseFrameList(text: string): FrameList {
  let tb = 0;
  let width = 0;
  let height = 0;
  const times: number[] = [];
  const durations: number[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) {
      const timeBase = /^#tb 0: (\d+)\/(\d+)/.exec(line);
      if (timeBase !== null) tb = Number(timeBase[1]) / Number(timeBase[2]);
      const dims = /^#dimensions 0: (\d+)x(\d+)/.exec(line);
      if (dims !== null) {
        width = Number(dims[1]);
        height = Number(dims[2]);
      }
      continue;
    }
    const fields = line.split(',').map((field) => field.trim());
    if (fields.length < 6 || fields[0] !== '0') continue;
    times.push(Number(fields[2]) * tb);
    durations.push(Number(fields[3]) * tb);
  }
  return { width, height, times, durations };
}

class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}
  async acquire(): Promise<() => void> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    return () => {
      this.active--;
      this.waiting.shift()?.();
    };
  }
}

export function createFfmpegVideoDecoder(options: FfmpegVideoDecoderOptions): VideoDecoderBackend {
  const slots = new Semaphore(options.maxConcurrent ?? 2);

  async function decode(bytes: Uint8Array, format: VideoFormat, video: VideoOptions, signal?: AbortSignal): Promise<DecodedVideo> {
    const name = FORMAT_NAMES[format];
    const input = format === 'mp4' ? mp4WithMoovFirst(bytes) : bytes;
    const inputArgs = [
      '-hide_banner', '-nostats', '-loglevel', 'level+info',
      '-max_alloc', String(MAX_ALLOC_BYTES),
      '-protocol_whitelist', 'pipe',
      '-f', DEMUXERS[format],
      '-i', 'pipe:0',
      '-map', '0:v:0', '-an', '-sn', '-dn',
      '-vsync', 'passthrough',
    ];
    const deadline = Date.now() + options.timeoutMs;
    const failed = (result: RunResult, pass: string): MediaError => {
      if (result.stopped === 'timeout') return mediaError('timeout', `decoding the ${name} video took longer than ${options.timeoutMs} ms (MEDIA_VIDEO_DECODE_TIMEOUT_MS)`);
      if (result.stopped === 'output') return mediaError('too_large', `the ${name} video has more frames than this server lists (${pass})`);
      if (result.stopped === 'frame_size') return mediaError('too_large', `the ${name} video's frames exceed the decoded-size limit of ${video.maxPixels} pixels`);
      return mediaError('decode_failed', `the ${name} video could not be decoded (${lastError(result.errors)})`);
    };
    // The container's frame size, refused before a decoder allocates a frame of it.
    const refuseOnInfo = (line: string) => {
      const size = streamFrameSize(line);
      return size !== null && size.width * size.height > video.maxPixels;
    };

    const list = await run(options.ffmpegPath, {
      args: [...inputArgs, '-f', 'framecrc', 'pipe:1'],
      input,
      maxStdout: MAX_FRAME_LIST_BYTES,
      deadline,
      signal,
      refuseOnInfo,
    });
    if (list.code !== 0 || list.stopped !== undefined) throw failed(list, 'frame list');
    const frames = parseFrameList(Buffer.from(list.stdout.buffer, list.stdout.byteOffset, list.stdout.byteLength).toString('utf8'));
    if (frames.times.length === 0 || frames.width === 0 || frames.height === 0) {
      throw mediaError('decode_failed', `the ${name} video has no decodable video frames`);
    }
    const { width, height } = frames;
    if (width * height > video.maxPixels) {
      throw mediaError('too_large', `the ${name} video's ${width}×${height} frames exceed the decoded-size limit of ${video.maxPixels} pixels`);
    }
    const first = frames.times[0];
    const lastEnd = frames.times.at(-1)! + (frames.durations.at(-1) ?? 0);
    const duration = Math.max(0, lastEnd - first);
    const totalFrames = frames.times.length;
    const sampled = sampleFrames(
      { totalFrames, fps: duration > 0 ? totalFrames / duration : 0, frameTimes: frames.times.map((t) => t - first), duration },
      video.sampling ?? { rule: 'uniform' },
      video.frames,
    );
    if (width * height * sampled.indices.length > video.maxPixels * 4) {
      throw mediaError('too_large', `${sampled.indices.length} frames of ${width}×${height} exceed the decoded-size limit`);
    }

    const frameBytes = width * height * 3;
    const expected = frameBytes * sampled.indices.length;
    const select = sampled.indices.map((i) => `eq(n\\,${i})`).join('+');
    const filter = `select=${select},scale=${width}:${height}:flags=bicubic+accurate_rnd+full_chroma_int,format=rgb24`;
    const pixels = await run(options.ffmpegPath, {
      args: [...inputArgs, '-vf', filter, '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'],
      input,
      maxStdout: expected,
      exactStdout: true,
      deadline,
      signal,
    });
    if (pixels.code !== 0 || pixels.stopped !== undefined) throw failed(pixels, 'frames');
    if (pixels.stdout.length !== expected) {
      throw mediaError('decode_failed', `the ${name} video gave ${Math.floor(pixels.stdout.length / frameBytes)} of the ${sampled.indices.length} frames its first pass listed`);
    }
    const images: DecodedImage[] = sampled.indices.map((_, k) => ({
      kind: 'image',
      width,
      height,
      rgb: new Uint8Array(pixels.stdout.buffer, pixels.stdout.byteOffset + k * frameBytes, frameBytes),
    }));
    return { kind: 'video', frames: images, timestamps: sampled.timestamps, duration: sampled.duration, totalFrames };
  }

  return {
    async decode(bytes, format, video, signal) {
      const release = await slots.acquire();
      try {
        return await decode(bytes, format, video, signal);
      } finally {
        release();
      }
    },
  };
}
