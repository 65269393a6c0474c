/**
 * Video → uniformly sampled RGB frames (vLLM samples `num_frames` indices evenly over the
 * whole video, first and last included; so does this).
 *
 * Demuxing covers MP4 (mp4box) and AVI (hand-written RIFF). Decoding needs a codec
 * decoder that runs outside native code, and the only one with a maintained pure-JS/WASM
 * implementation is Motion JPEG (every frame a JPEG, decoded by jpeg-js). H.264, HEVC,
 * AV1, VP9 and MPEG-4 Part 2 have no maintained pure-JS/WASM decoder package, so such
 * videos are refused with a 400 that names container and codec. WMV (ASF) is refused
 * the same way: no JS/WASM decoder exists for Windows Media Video.
 */
import { mediaError } from '../errors.js';
import type { DecodedImage, DecodedVideo } from '../types.js';
import { demuxAvi } from './avi-demux.js';
import { describeCodec, type DemuxedVideo } from './demuxed-video.js';
import { decodeJpegImage, type ImageLimits } from './image.js';
import { demuxMp4 } from './mp4-demux.js';

export interface VideoOptions extends ImageLimits {
  /** Frames to sample. */
  frames: number;
}

/** MP4 codec strings and AVI FourCCs of Motion JPEG. */
const MOTION_JPEG = /^(mjpg|mjpa|mjpb|jpeg|avrn|dmb1|mp4v\.6c)$/i;

/**
 * `count` indices spread evenly over [0, total), first and last included: vLLM's
 * np.linspace(0, total - 1, count, dtype=int), which truncates. All frames when there
 * are no more than `count`.
 */
export function uniformFrameIndices(total: number, count: number): number[] {
  if (total <= count) return Array.from({ length: total }, (_, i) => i);
  if (count === 1) return [0];
  return Array.from({ length: count }, (_, i) => Math.floor((i * (total - 1)) / (count - 1)));
}

function unsupported(video: DemuxedVideo): Error {
  return mediaError(
    'unsupported_codec',
    `${video.container} video with codec ${describeCodec(video.codec)} cannot be decoded by this server: ` +
      'only Motion JPEG video has a maintained pure-JS/WASM decoder; send sampled frames as images instead',
  );
}

export function decodeVideo(bytes: Uint8Array, format: 'mp4' | 'avi' | 'wmv', options: VideoOptions): DecodedVideo {
  if (format === 'wmv') {
    throw mediaError(
      'unsupported_codec',
      'WMV (ASF container) video cannot be decoded by this server: there is no maintained pure-JS/WASM decoder for Windows Media Video; send sampled frames as images instead',
    );
  }
  const video = format === 'mp4' ? demuxMp4(bytes) : demuxAvi(bytes);
  if (!MOTION_JPEG.test(video.codec)) throw unsupported(video);
  if (video.frames.length === 0) throw mediaError('decode_failed', `the ${video.container} video has no frames`);
  if (video.width * video.height * Math.min(options.frames, video.frames.length) > options.maxPixels * 4) {
    throw mediaError('too_large', `${options.frames} frames of ${video.width}×${video.height} exceed the decoded-size limit`);
  }
  const indices = uniformFrameIndices(video.frames.length, options.frames);
  const frames: DecodedImage[] = indices.map((i) => {
    const ref = video.frames[i];
    return decodeJpegImage(bytes.subarray(ref.offset, ref.offset + ref.size), options);
  });
  return {
    kind: 'video',
    frames,
    timestamps: indices.map((i) => video.frames[i].time),
    duration: video.duration,
    totalFrames: video.frames.length,
  };
}
