/**
 * Test videos made from known synthetic frames with the encoders of the npm-shipped
 * ffmpeg (libx264, libx265, libaom-av1, libvpx, wmv2, mpeg4), so every test compares
 * decoded frames against the frames that went in.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundledFfmpegPath } from '../../../src/media/node-ffmpeg.js';

export const FFMPEG = bundledFfmpegPath();

export interface Codec {
  name: string;
  /** Output file extension (picks the muxer). */
  ext: 'mp4' | 'webm' | 'wmv' | 'avi';
  args: string[];
}

export const CODECS: Record<string, Codec> = {
  h264: { name: 'H.264', ext: 'mp4', args: ['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '12', '-pix_fmt', 'yuv420p'] },
  hevc: { name: 'H.265/HEVC', ext: 'mp4', args: ['-c:v', 'libx265', '-preset', 'veryfast', '-crf', '12', '-pix_fmt', 'yuv420p', '-tag:v', 'hvc1', '-x265-params', 'log-level=error'] },
  av1: { name: 'AV1', ext: 'mp4', args: ['-c:v', 'libaom-av1', '-cpu-used', '8', '-crf', '15', '-b:v', '0', '-pix_fmt', 'yuv420p', '-strict', 'experimental'] },
  vp8: { name: 'VP8', ext: 'webm', args: ['-c:v', 'libvpx', '-crf', '4', '-b:v', '2M', '-pix_fmt', 'yuv420p'] },
  vp9: { name: 'VP9', ext: 'webm', args: ['-c:v', 'libvpx-vp9', '-crf', '10', '-b:v', '0', '-deadline', 'realtime', '-cpu-used', '8', '-pix_fmt', 'yuv420p'] },
  wmv: { name: 'WMV 8', ext: 'wmv', args: ['-c:v', 'wmv2', '-q:v', '2'] },
  mpeg4: { name: 'MPEG-4 Part 2', ext: 'avi', args: ['-c:v', 'mpeg4', '-q:v', '2'] },
};

/**
 * Frame `index` of a w × h test video: four flat quadrants whose colours change with the
 * index (flat 16-pixel-aligned blocks survive 4:2:0 chroma and lossy coding nearly intact).
 */
export function syntheticFrame(index: number, width: number, height: number): Uint8Array {
  const rgb = new Uint8Array(width * height * 3);
  const quadrant = (q: number): number[] => [(40 + 50 * q + 37 * index) % 220 + 20, (200 - 30 * q + 53 * index) % 220 + 20, (90 + 70 * q + 29 * index) % 220 + 20];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const colour = quadrant((y < height / 2 ? 0 : 2) + (x < width / 2 ? 0 : 1));
      rgb.set(colour, (y * width + x) * 3);
    }
  }
  return rgb;
}

/**
 * Encodes synthetic frames first … first + count - 1 at `fps`; `extra` goes before the
 * output name (e.g. -movflags +faststart).
 */
export function encodeVideo(codec: Codec, count: number, width: number, height: number, fps: number, extra: string[] = [], first = 0): Uint8Array {
  return encodeFrames(codec, Array.from({ length: count }, (_, i) => syntheticFrame(first + i, width, height)), width, height, fps, extra);
}

/** Encodes the given RGB24 frames at `fps`. */
export function encodeFrames(codec: Codec, rgbFrames: readonly Uint8Array[], width: number, height: number, fps: number, extra: string[] = []): Uint8Array {
  if (FFMPEG === null) throw new Error('the npm-shipped ffmpeg is not installed');
  const frames = Buffer.concat(rgbFrames);
  const dir = mkdtempSync(join(tmpdir(), 'video-fixture-'));
  try {
    const out = join(dir, `video.${codec.ext}`);
    const result = spawnSync(
      FFMPEG,
      ['-hide_banner', '-loglevel', 'error', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-s', `${width}x${height}`, '-r', String(fps), '-i', 'pipe:0', ...codec.args, ...extra, '-y', out],
      { input: frames, maxBuffer: 1 << 26 },
    );
    if (result.status !== 0) throw new Error(`encoding ${codec.name} failed: ${result.stderr.toString()}`);
    return new Uint8Array(readFileSync(out));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Mean absolute difference per channel value between two RGB frames. */
export function meanAbsDiff(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) throw new Error(`frame sizes differ: ${a.length} vs ${b.length}`);
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i] - b[i]);
  return sum / a.length;
}

/** The top-level MP4 box types in order. */
export function mp4BoxOrder(bytes: Uint8Array): string[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const types: string[] = [];
  for (let at = 0; at + 8 <= bytes.length; ) {
    const size = view.getUint32(at);
    types.push(String.fromCharCode(...bytes.subarray(at + 4, at + 8)));
    if (size < 8) break;
    at += size;
  }
  return types;
}
