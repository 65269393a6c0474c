/**
 * Video → sampled RGB frames (frame-sampling.ts: evenly, or by fps for SmolVLM).
 *
 * Under Node a `VideoDecoderBackend` (the npm-shipped ffmpeg, ../node-ffmpeg.ts) decodes
 * every codec. Without one (workerd, browsers) this pure-JS path runs: MP4 (mp4box) and
 * AVI (hand-written RIFF) demuxed, frames decoded only for Motion JPEG (every frame a
 * JPEG, decoded by jpeg-js); H.264, HEVC, AV1, VP9, MPEG-4 Part 2, WebM and WMV are
 * refused with a 400 that names container and codec.
 */
import { mediaError } from '../errors.js';
import type { DecodedImage, DecodedVideo, MediaFormat } from '../types.js';
import { demuxAvi } from './avi-demux.js';
import { describeCodec, type DemuxedVideo } from './demuxed-video.js';
import { sampleFrames, type VideoSampling } from './frame-sampling.js';
import { loadVideoCodecs } from './codecs.js';
import { decodeJpegImage, type ImageLimits } from './image.js';
import { demuxMp4 } from './mp4-demux.js';

export { uniformFrameIndices } from './frame-sampling.js';

export type VideoFormat = Extract<MediaFormat, 'mp4' | 'avi' | 'wmv' | 'webm'>;

export interface VideoOptions extends ImageLimits {
  /** Frames to sample at most (MEDIA_VIDEO_FRAMES). */
  frames: number;
  /** The served model's rule; uniform when absent. */
  sampling?: VideoSampling;
}

/** A decoder for every codec, where the runtime has one (Node: ffmpeg). Throws MediaError. */
export interface VideoDecoderBackend {
  decode(bytes: Uint8Array, format: VideoFormat, options: VideoOptions, signal?: AbortSignal): Promise<DecodedVideo>;
}

/** MP4 codec strings and AVI FourCCs of Motion JPEG. */
const MOTION_JPEG = /^(mjpg|mjpa|mjpb|jpeg|avrn|dmb1|mp4v\.6c)$/i;

function unsupported(video: DemuxedVideo): Error {
  return mediaError(
    'unsupported_codec',
    `${video.container} video with codec ${describeCodec(video.codec)} cannot be decoded by this server: ` +
      'this runtime has no ffmpeg, and only Motion JPEG video has a maintained pure-JS/WASM decoder; send sampled frames as images instead',
  );
}

/** With a backend, the backend decodes; otherwise the pure-JS path below. */
export function decodeVideoWith(
  bytes: Uint8Array,
  format: VideoFormat,
  options: VideoOptions,
  backend: VideoDecoderBackend | undefined,
  signal?: AbortSignal,
): Promise<DecodedVideo> {
  if (backend !== undefined) return backend.decode(bytes, format, options, signal);
  return loadVideoCodecs().then(() => decodeVideo(bytes, format, options));
}

/** The pure-JS path; its codecs load on first use: await loadVideoCodecs() (codecs.ts) first. */
export function decodeVideo(bytes: Uint8Array, format: VideoFormat, options: VideoOptions): DecodedVideo {
  if (format === 'wmv' || format === 'webm') {
    const what = format === 'wmv' ? 'WMV (ASF container)' : 'WebM/Matroska';
    throw mediaError(
      'unsupported_codec',
      `${what} video cannot be decoded in this runtime: it has no ffmpeg, and there is no maintained pure-JS/WASM decoder for its codecs; send sampled frames as images instead`,
    );
  }
  const video = format === 'mp4' ? demuxMp4(bytes) : demuxAvi(bytes);
  if (!MOTION_JPEG.test(video.codec)) throw unsupported(video);
  if (video.frames.length === 0) throw mediaError('decode_failed', `the ${video.container} video has no frames`);
  if (video.width * video.height * Math.min(options.frames, video.frames.length) > options.maxPixels * 4) {
    throw mediaError('too_large', `${options.frames} frames of ${video.width}×${video.height} exceed the decoded-size limit`);
  }
  const times = video.frames.map((frame) => frame.time);
  const fps = video.duration > 0 ? video.frames.length / video.duration : 0;
  const sampled = sampleFrames({ totalFrames: times.length, fps, frameTimes: times, duration: video.duration }, options.sampling ?? { rule: 'uniform' }, options.frames);
  const { indices } = sampled;
  const frames: DecodedImage[] = indices.map((i) => {
    const ref = video.frames[i];
    return decodeJpegImage(bytes.subarray(ref.offset, ref.offset + ref.size), options);
  });
  return {
    kind: 'video',
    frames,
    timestamps: sampled.timestamps,
    duration: sampled.duration,
    totalFrames: video.frames.length,
  };
}
