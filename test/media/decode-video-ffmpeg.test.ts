/**
 * Video under Node: the npm-shipped ffmpeg decodes H.264, H.265, AV1, VP8, VP9, WMV and
 * MPEG-4 Part 2 to the frames that were encoded (synthetic frames, encoded here with the
 * same binary's encoders), sampled evenly or by SmolVLM's fps rule; broken files are
 * 400s, slow ones are killed at the deadline.
 */
import { describe, expect, it } from 'vitest';
import { decodeMedia } from '../../src/media/decode/index.js';
import { mp4WithMoovFirst } from '../../src/media/decode/mp4-faststart.js';
import { resolveMediaConfig } from '../../src/media/config.js';
import { sniffFormat } from '../../src/media/magic.js';
import { createNodeMediaFetcher } from '../../src/media/node.js';
import { createFfmpegVideoDecoder, parseFrameList, streamFrameSize } from '../../src/media/node-ffmpeg.js';
import type { DecodedVideo, FetchedMedia, MediaFormat } from '../../src/media/types.js';
import { CODECS, encodeFrames, encodeVideo, FFMPEG, meanAbsDiff, mp4BoxOrder, syntheticFrame } from './helpers/ffmpeg-encode.js';

const W = 64;
const H = 48;
const FRAMES = 12;
const FPS = 4;

const decoder = createFfmpegVideoDecoder({ ffmpegPath: FFMPEG!, timeoutMs: 60_000 });
const OPTIONS = { maxImagePixels: 1_000_000, audioSampleRate: 16_000, maxAudioSeconds: 60, videoFrames: 4, videoDecoder: decoder };

function media(bytes: Uint8Array): FetchedMedia {
  const format = sniffFormat(bytes) as MediaFormat;
  return { kind: 'video', format, bytes, source: 'data' };
}

async function decode(bytes: Uint8Array, options: Partial<typeof OPTIONS> & { videoSampling?: { rule: 'fps'; fps: number; maxFrames: number } } = {}) {
  const decoded = await decodeMedia(media(bytes), { ...OPTIONS, ...options });
  expect(decoded.kind).toBe('video');
  return decoded as DecodedVideo;
}

function expectSourceFrames(video: DecodedVideo, indices: number[], tolerance: number) {
  expect(video.frames).toHaveLength(indices.length);
  video.frames.forEach((frame, k) => {
    expect([frame.width, frame.height]).toEqual([W, H]);
    const source = syntheticFrame(indices[k], W, H);
    expect(meanAbsDiff(frame.rgb, source)).toBeLessThan(tolerance);
    // Each frame is closer to its own source than to its neighbours'.
    const other = syntheticFrame(indices[k] + 1, W, H);
    expect(meanAbsDiff(frame.rgb, source)).toBeLessThan(meanAbsDiff(frame.rgb, other));
  });
}

it('the npm-shipped ffmpeg is installed, and the Node media fetcher (npm start) decodes video with it', async () => {
  expect(FFMPEG).not.toBeNull();
  const fetcher = createNodeMediaFetcher(resolveMediaConfig());
  expect(fetcher.videoDecoder).toBeDefined();
  const bytes = encodeVideo(CODECS.h264, 3, 16, 16, 4);
  const fetched = await fetcher.fetch(`data:video/mp4;base64,${Buffer.from(bytes).toString('base64')}`, 'video');
  const video = (await decodeMedia(fetched, { ...fetcher.config, videoDecoder: fetcher.videoDecoder })) as DecodedVideo;
  expect(video.totalFrames).toBe(3);
});

describe.each([
  ['h264', 'mp4'],
  ['hevc', 'mp4'],
  ['av1', 'mp4'],
  ['vp8', 'webm'],
  ['vp9', 'webm'],
  ['wmv', 'wmv'],
  ['mpeg4', 'avi'],
] as const)('%s', (key, format) => {
  const bytes = encodeVideo(CODECS[key], FRAMES, W, H, FPS);

  it(`is sniffed as ${format} and decodes to the source frames, sampled evenly with their times`, async () => {
    expect(sniffFormat(bytes)).toBe(format);
    const video = await decode(bytes);
    expect(video.totalFrames).toBe(FRAMES);
    expect(video.duration).toBeCloseTo(FRAMES / FPS, 6);
    expect(video.timestamps).toEqual([0, 3, 7, 11].map((i) => i / FPS));
    expectSourceFrames(video, [0, 3, 7, 11], 4);
  });
});

describe('sampling and MP4 layout', () => {
  const moovLast = encodeVideo(CODECS.h264, FRAMES, W, H, FPS);
  const moovFirst = encodeVideo(CODECS.h264, FRAMES, W, H, FPS, ['-movflags', '+faststart']);

  it('samples by fps as SmolVLM does: round(fps × duration) frames, timestamps index / fps', async () => {
    const video = await decode(moovLast, { videoFrames: 16, videoSampling: { rule: 'fps', fps: 2, maxFrames: 64 } });
    expect(video.timestamps).toEqual([0, 2, 4, 6, 8, 11].map((i) => i / FPS));
    expect(video.duration).toBe(3);
    expectSourceFrames(video, [0, 2, 4, 6, 8, 11], 4);
  });

  it('MEDIA_VIDEO_FRAMES caps the fps rule', async () => {
    const video = await decode(moovLast, { videoFrames: 3, videoSampling: { rule: 'fps', fps: 2, maxFrames: 64 } });
    expect(video.timestamps).toEqual([0, 5, 11].map((i) => i / FPS));
    expectSourceFrames(video, [0, 5, 11], 4);
  });

  it('an MP4 with its index at the end is reordered in memory and decodes like a faststart one', async () => {
    expect(mp4BoxOrder(moovLast).indexOf('moov')).toBeGreaterThan(mp4BoxOrder(moovLast).indexOf('mdat'));
    const reordered = mp4WithMoovFirst(moovLast);
    expect(mp4BoxOrder(reordered).indexOf('moov')).toBeLessThan(mp4BoxOrder(reordered).indexOf('mdat'));
    expect(reordered.length).toBe(moovLast.length);
    const [a, b] = await Promise.all([decode(moovLast), decode(moovFirst)]);
    a.frames.forEach((frame, k) => expect(Buffer.from(frame.rgb).equals(Buffer.from(b.frames[k].rgb))).toBe(true));
    // The input itself is left untouched, and a faststart file is passed through as it is.
    expect(mp4BoxOrder(moovLast).indexOf('moov')).toBeGreaterThan(mp4BoxOrder(moovLast).indexOf('mdat'));
    expect(mp4WithMoovFirst(moovFirst)).toBe(moovFirst);
  });
});

describe('refusals', () => {
  const good = encodeVideo(CODECS.h264, FRAMES, W, H, FPS);

  it('a truncated MP4 is decode_failed, naming the container', async () => {
    await expect(decode(good.subarray(0, Math.floor(good.length / 2)))).rejects.toMatchObject({ reason: 'decode_failed', message: expect.stringMatching(/^the MP4 video could not be decoded/) });
  });

  it('a WebM header followed by garbage is decode_failed', async () => {
    const junk = new Uint8Array(4096).map((_, i) => (i * 7919) % 251);
    junk.set([0x1a, 0x45, 0xdf, 0xa3]);
    await expect(decode(junk)).rejects.toMatchObject({ reason: 'decode_failed', message: expect.stringContaining('WebM') });
  });

  it('frames above the decoded-size limit are too_large before any pixel is output', async () => {
    await expect(decode(good, { maxImagePixels: W * H - 1 })).rejects.toMatchObject({ reason: 'too_large' });
  });

  it('a frame size above the limit is refused from the container, before frames are decoded', async () => {
    const big = encodeFrames(CODECS.h264, [new Uint8Array(1280 * 720 * 3).fill(90)], 1280, 720, 4);
    await expect(decode(big, { maxImagePixels: 1280 * 720 - 1 })).rejects.toMatchObject({
      reason: 'too_large',
      message: `the MP4 video's frames exceed the decoded-size limit of ${1280 * 720 - 1} pixels`,
    });
    expect((await decode(big, { maxImagePixels: 1280 * 720 })).frames[0].width).toBe(1280);
  });

  it('a decode past its deadline is killed and refused as a timeout', async () => {
    const hasty = createFfmpegVideoDecoder({ ffmpegPath: FFMPEG!, timeoutMs: 1 });
    await expect(decode(good, { videoDecoder: hasty })).rejects.toMatchObject({ reason: 'timeout' });
    // The decoder is still usable afterwards.
    expect((await decode(good)).frames).toHaveLength(4);
  });

  it('an aborted request kills the decode and rejects with its reason', async () => {
    const controller = new AbortController();
    const reason = new Error('client gone');
    controller.abort(reason);
    await expect(decoder.decode(good, 'mp4', { maxPixels: 1e6, frames: 4 }, controller.signal)).rejects.toBe(reason);
  });
});

describe('without ffmpeg (workerd, browsers: the runtime-neutral fetcher has no video decoder)', () => {
  const { videoDecoder: _, ...noDecoder } = OPTIONS;

  it.each([
    ['h264', /^MP4 video with codec H\.264\/AVC \(avc1[^)]*\) cannot be decoded by this server: this runtime has no ffmpeg/],
    ['hevc', /^MP4 video with codec H\.265\/HEVC \(hvc1[^)]*\) cannot be decoded/],
    ['av1', /^MP4 video with codec AV1 \(av01[^)]*\) cannot be decoded/],
    ['vp9', /^WebM\/Matroska video cannot be decoded in this runtime: it has no ffmpeg/],
    ['wmv', /^WMV \(ASF container\) video cannot be decoded in this runtime/],
  ] as const)('%s is refused as unsupported_codec, naming the codec', async (key, message) => {
    const bytes = encodeVideo(CODECS[key], 2, 16, 16, 4);
    await expect(decodeMedia(media(bytes), noDecoder)).rejects.toMatchObject({ reason: 'unsupported_codec', message: expect.stringMatching(message) });
  });
});

describe('reading ffmpeg', () => {
  it('takes the frame size from the stream line, not from a FourCC or forged metadata', () => {
    expect(streamFrameSize('    Stream #0:0(und): Video: h264 (High) (avc1 / 0x31637661), yuv420p, 320x240 [SAR 1:1 DAR 4:3], 30 fps')).toEqual({ width: 320, height: 240 });
    expect(streamFrameSize('    Stream #0:0: Video: wmv2 (WMV2 / 0x32564D57), yuv420p, 64x48, 4 fps')).toEqual({ width: 64, height: 48 });
    expect(streamFrameSize('    title           : Stream #0:0: Video: x, 99999x99999')).toBeNull();
    expect(streamFrameSize('    Stream #0:1(und): Audio: aac (LC), 48000 Hz, stereo')).toBeNull();
  });

  it('lists frames from framecrc in output order with the time base applied', () => {
    const list = parseFrameList('#tb 0: 1/4\n#media_type 0: video\n#dimensions 0: 64x48\n0,          0,          0,        1,     4608, 0x1\n0,          1,          2,        1,     4608, 0x2\n');
    expect(list).toEqual({ width: 64, height: 48, times: [0, 0.5], durations: [0.25, 0.25] });
  });
});
