/**
 * Video: Motion JPEG in MP4 and AVI decodes to uniformly sampled frames; other codecs
 * and WMV are refused with a message naming container and codec.
 */
import { describe, expect, it } from 'vitest';
import { decodeVideo, uniformFrameIndices } from '../../src/media/decode/video.js';
import { sniffFormat } from '../../src/media/magic.js';
import { asfStub, avi, flatJpeg, greyLevel, mjpegAvi, mjpegMp4 } from './helpers/video-writers.js';
import { loadVideoCodecs } from '../../src/media/decode/codecs.js';

// The server loads the codecs with its first media request (decodeVideoWith); these tests call decodeVideo directly.
await loadVideoCodecs();

const OPTIONS = { maxPixels: 1_000_000, frames: 4 };

/** The grey level of a decoded flat frame (its centre pixel). */
function level(frame: { width: number; height: number; rgb: Uint8Array }): number {
  const i = (Math.floor(frame.height / 2) * frame.width + Math.floor(frame.width / 2)) * 3;
  return frame.rgb[i];
}

describe('frame sampling', () => {
  it('spreads indices evenly, first and last included, like np.linspace(..., dtype=int)', () => {
    expect(uniformFrameIndices(10, 4)).toEqual([0, 3, 6, 9]);
    expect(uniformFrameIndices(100, 5)).toEqual([0, 24, 49, 74, 99]);
    expect(uniformFrameIndices(3, 8)).toEqual([0, 1, 2]);
    expect(uniformFrameIndices(7, 1)).toEqual([0]);
  });
});

describe('Motion JPEG', () => {
  it('samples and decodes frames of an MP4', () => {
    const bytes = mjpegMp4(10, 16, 16, 100);
    expect(sniffFormat(bytes)).toBe('mp4');
    const video = decodeVideo(bytes, 'mp4', OPTIONS);
    expect(video.totalFrames).toBe(10);
    expect(video.duration).toBeCloseTo(1.0, 6);
    expect(video.timestamps).toEqual([0, 0.3, 0.6, 0.9]);
    expect(video.frames.map((f) => [f.width, f.height])).toEqual([[16, 16], [16, 16], [16, 16], [16, 16]]);
    // Frames 0, 3, 6 and 9 of flat grey 20*i; JPEG keeps a flat block within a couple of levels.
    video.frames.forEach((frame, k) => expect(Math.abs(level(frame) - greyLevel([0, 3, 6, 9][k]))).toBeLessThanOrEqual(2));
  });

  it('samples and decodes frames of an AVI', () => {
    const bytes = mjpegAvi(5);
    expect(sniffFormat(bytes)).toBe('avi');
    const video = decodeVideo(bytes, 'avi', { ...OPTIONS, frames: 3 });
    expect(video.totalFrames).toBe(5);
    expect(video.duration).toBeCloseTo(0.5, 6);
    expect(video.timestamps).toEqual([0, 0.2, 0.4]);
    video.frames.forEach((frame, k) => expect(Math.abs(level(frame) - greyLevel([0, 2, 4][k]))).toBeLessThanOrEqual(2));
  });

  it('refuses frames larger than the decoded-size limit', () => {
    expect(() => decodeVideo(mjpegMp4(4, 64, 64), 'mp4', { maxPixels: 1000, frames: 4 })).toThrow(expect.objectContaining({ reason: 'too_large' }));
  });
});

describe('codecs without a decoder', () => {
  it('refuses H.264 in MP4, naming container and codec', () => {
    expect(() => decodeVideo(mjpegMp4(3, 16, 16, 100, 'avc1'), 'mp4', OPTIONS)).toThrow(
      expect.objectContaining({ reason: 'unsupported_codec', message: expect.stringMatching(/^MP4 video with codec H\.264\/AVC \(avc1/) }),
    );
  });

  it('refuses an H.264 AVI, naming the FourCC', () => {
    const bytes = avi([new Uint8Array([0, 0, 0, 1, 0x65])], 16, 16, 'H264');
    expect(() => decodeVideo(bytes, 'avi', OPTIONS)).toThrow(expect.objectContaining({ reason: 'unsupported_codec', message: expect.stringContaining('AVI video with codec H.264/AVC (H264)') }));
  });

  it('refuses WMV', () => {
    const bytes = asfStub();
    expect(sniffFormat(bytes)).toBe('wmv');
    expect(() => decodeVideo(bytes, 'wmv', OPTIONS)).toThrow(expect.objectContaining({ reason: 'unsupported_codec', message: expect.stringContaining('WMV') }));
  });

  it('refuses a corrupt MP4 as undecodable', () => {
    const bytes = mjpegMp4(3).subarray(0, 40);
    expect(() => decodeVideo(bytes, 'mp4', OPTIONS)).toThrow(expect.objectContaining({ reason: 'decode_failed' }));
  });

  it('decodes a single-frame AVI', () => {
    const video = decodeVideo(avi([flatJpeg(8, 8, [100, 100, 100])], 8, 8, 'MJPG'), 'avi', OPTIONS);
    expect(video.frames).toHaveLength(1);
  });
});
