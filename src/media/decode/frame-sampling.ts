/**
 * Which frames of a video a model sees. Two rules:
 *
 * - `uniform` (vLLM, and every family without its own rule): `count` indices spread
 *   evenly over the whole video, first and last included; timestamps are the frames'
 *   presentation times.
 * - `fps` (SmolVLM's video processor, `video_sampling` in its preprocessor config):
 *   round(fps × duration) frames, at most `maxFrames`, spread evenly between a start and
 *   an end index that skip one second at each end when the video is long enough;
 *   timestamps are index / video fps, the duration total frames / video fps, as
 *   transformers' VideoMetadata computes them.
 */

export type VideoSampling = { rule: 'uniform' } | { rule: 'fps'; fps: number; maxFrames: number };

/** What the sampler needs to know about the whole video track. */
export interface VideoTrackInfo {
  totalFrames: number;
  /** Average frame rate (frames per second). */
  fps: number;
  /** Presentation time of each frame in seconds, in presentation order. */
  frameTimes: readonly number[];
  /** Duration of the track in seconds. */
  duration: number;
}

export interface SampledFrames {
  indices: number[];
  timestamps: number[];
  /** The duration the prompt states. */
  duration: number;
}

/**
 * np.linspace(start, end, count, dtype=int): evenly spaced, both ends included,
 * truncated towards zero.
 */
function linspaceInt(start: number, end: number, count: number): number[] {
  if (count === 1) return [start];
  return Array.from({ length: count }, (_, i) => Math.trunc(start + (i * (end - start)) / (count - 1)));
}

/**
 * `count` indices spread evenly over [0, total), first and last included: vLLM's
 * np.linspace(0, total - 1, count, dtype=int). All frames when there are no more than `count`.
 */
export function uniformFrameIndices(total: number, count: number): number[] {
  if (total <= count) return Array.from({ length: total }, (_, i) => i);
  return linspaceInt(0, total - 1, count);
}

/** SmolVLMVideoProcessor.sample_frames with skip_secs = 1, rule for rule. */
export function smolvlmFrameIndices(totalFrames: number, videoFps: number, duration: number, fps: number, maxFrames: number): number[] {
  const skipSecs = 1;
  // Python's round() rounds half to even.
  const estimated = roundHalfEven(fps * duration);
  const desired = Math.max(1, Math.min(estimated, maxFrames));
  let start = 0;
  let end = totalFrames - 1;
  if (duration - 2 * skipSecs > maxFrames * fps) {
    start = Math.trunc(skipSecs * videoFps);
    end = Math.trunc(totalFrames - skipSecs * videoFps);
  }
  start = Math.max(0, start);
  end = Math.min(end, totalFrames - 1);
  if (start >= end) {
    start = 0;
    end = totalFrames - 1;
  }
  return [...new Set(linspaceInt(start, end, desired))].sort((a, b) => a - b);
}

function roundHalfEven(value: number): number {
  const floor = Math.floor(value);
  const diff = value - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** Frames evenly spread over a video when neither MEDIA_VIDEO_FRAMES nor the model says how many. */
export const UNIFORM_VIDEO_FRAMES = 16;

/** The frame cap without MEDIA_VIDEO_FRAMES: the model's max_frames (fps rule), else UNIFORM_VIDEO_FRAMES. */
export function defaultVideoFrames(sampling: VideoSampling | undefined): number {
  return sampling?.rule === 'fps' ? sampling.maxFrames : UNIFORM_VIDEO_FRAMES;
}

/** The frames `sampling` picks, `cap` (MEDIA_VIDEO_FRAMES, or defaultVideoFrames) at most. */
export function sampleFrames(track: VideoTrackInfo, sampling: VideoSampling, cap: number): SampledFrames {
  if (sampling.rule === 'fps' && track.fps > 0) {
    const duration = track.totalFrames / track.fps;
    const indices = smolvlmFrameIndices(track.totalFrames, track.fps, duration, sampling.fps, Math.min(sampling.maxFrames, cap));
    return { indices, timestamps: indices.map((i) => i / track.fps), duration };
  }
  const indices = uniformFrameIndices(track.totalFrames, cap);
  return { indices, timestamps: indices.map((i) => track.frameTimes[i]), duration: track.duration };
}
