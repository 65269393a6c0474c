/**
 * Frame sampling: vLLM's even spread and SmolVLM's fps rule. The expected indices were
 * computed with numpy from SmolVLMVideoProcessor.sample_frames' rule (round, linspace
 * with dtype=int, unique; one second skipped at each end of a long enough video).
 */
import { describe, expect, it } from 'vitest';
import { sampleFrames, smolvlmFrameIndices, uniformFrameIndices } from '../../src/media/decode/frame-sampling.js';

describe('SmolVLM fps sampling', () => {
  it.each([
    // total frames, video fps, duration, target fps, max frames → indices
    [150, 30, 5, 1, 64, [0, 37, 74, 111, 149]],
    [3000, 30, 100, 1, 16, [30, 226, 422, 618, 814, 1010, 1206, 1402, 1598, 1794, 1990, 2186, 2382, 2578, 2774, 2970]],
    [12, 4, 3, 2, 64, [0, 2, 4, 6, 8, 11]],
    [5, 10, 0.5, 1, 64, [0]],
    [25, 10, 2.5, 1, 64, [0, 24]],
    [7, 10, 0.7, 8, 64, [0, 1, 2, 3, 4, 6]],
    [600, 24, 25, 1, 8, [24, 102, 181, 260, 339, 418, 497, 576]],
    [240, 24, 10, 0.5, 64, [0, 59, 119, 179, 239]],
  ])('%i frames at %i fps over %s s, sampled at %s fps (max %i)', (total, videoFps, duration, fps, maxFrames, want) => {
    expect(smolvlmFrameIndices(total, videoFps, duration, fps, maxFrames)).toEqual(want);
  });

  it('states index / fps as timestamps and frames / fps as the duration, MEDIA_VIDEO_FRAMES capping max_frames', () => {
    const track = { totalFrames: 600, fps: 24, frameTimes: Array.from({ length: 600 }, (_, i) => i / 24 + 0.001), duration: 25.02 };
    const sampled = sampleFrames(track, { rule: 'fps', fps: 1, maxFrames: 64 }, 8);
    expect(sampled.indices).toEqual([24, 102, 181, 260, 339, 418, 497, 576]);
    expect(sampled.timestamps).toEqual(sampled.indices.map((i) => i / 24));
    expect(sampled.duration).toBe(25);
  });

  it('the uniform rule keeps presentation times and the track duration', () => {
    const track = { totalFrames: 10, fps: 10, frameTimes: Array.from({ length: 10 }, (_, i) => 0.5 + i / 10), duration: 1 };
    const sampled = sampleFrames(track, { rule: 'uniform' }, 4);
    expect(sampled.indices).toEqual(uniformFrameIndices(10, 4));
    expect(sampled.indices).toEqual([0, 3, 6, 9]);
    expect(sampled.timestamps).toEqual([0, 3, 6, 9].map((i) => track.frameTimes[i]));
    expect(sampled.duration).toBe(1);
  });
});
