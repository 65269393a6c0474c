/**
 * SmolVLM2's video frames as transformers' SmolVLMVideoProcessor samples them by default
 * (test/fixtures/transformers5/video/sampling.json, scripts/transformers5/build_video_sampling.py):
 * the processor's fps and max_frames decide, with no cap of our own unless MEDIA_VIDEO_FRAMES sets one.
 */
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hono } from 'hono';
import { parseServerConfig } from '../../src/config/server-config.js';
import { preprocessorSettings } from '../../src/engine/loading/folder-layout.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createApp } from '../../src/http/app.js';
import { createMediaFetcher, resolveMediaConfig } from '../../src/media/index.js';
import { defaultVideoFrames, sampleFrames, UNIFORM_VIDEO_FRAMES } from '../../src/media/decode/frame-sampling.js';
import { smolvlmVideoSampling } from '../../src/multimodal/processors/idefics3.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { postJson } from '../http/helpers.js';
import { avi, flatJpeg } from '../media/helpers/video-writers.js';
import { smolvlm2Folder } from './fixtures.js';

interface SamplingReference {
  video_processor: Record<string, unknown>;
  cases: Array<{ total_frames: number; fps: number; indices: number[] }>;
}
const expected = JSON.parse(readFileSync(new URL('../fixtures/transformers5/video/sampling.json', import.meta.url), 'utf8')) as SamplingReference;

/** The sampling a transformers 5 folder gives: the video processor nested in processor_config.json. */
const nestedSampling = () =>
  smolvlmVideoSampling(preprocessorSettings(undefined, { image_processor: { do_image_splitting: true }, video_processor: expected.video_processor })!, {});

describe('SmolVLM2 video sampling vs transformers', () => {
  it('reads fps 1 and max_frames 64 from the saved video processor', () => {
    expect(nestedSampling()).toEqual({ rule: 'fps', fps: 1, maxFrames: 64 });
    expect(defaultVideoFrames(nestedSampling())).toBe(64);
    expect(defaultVideoFrames({ rule: 'uniform' })).toBe(UNIFORM_VIDEO_FRAMES);
  });

  it.each(expected.cases.map((c) => [c.total_frames, c.fps, c] as const))('%i frames at %s fps: the same frames as sample_frames', (_total, _fps, c) => {
    const sampling = nestedSampling();
    const track = { totalFrames: c.total_frames, fps: c.fps, frameTimes: Array.from({ length: c.total_frames }, (_, i) => i / c.fps), duration: c.total_frames / c.fps };
    expect(sampleFrames(track, sampling, defaultVideoFrames(sampling)).indices).toEqual(c.indices);
  });
});

describe('over HTTP: a 30 s video on a SmolVLM2 folder', () => {
  let dir: string;
  let engine: LocalEngine;
  let app: Hono;
  beforeAll(async () => {
    dir = await smolvlm2Folder({ video_sampling: expected.video_processor.video_sampling });
    engine = await createNodeEngine({ modelDir: dir, servedModelName: 'smolvlm2' });
    // /tokenize counts up to the served context: the 30 frames' ~1 K tokens need more than the fixture's 512 (SmolVLM2 serves 8192).
    const wide = Object.create(engine, { info: { value: { ...engine.info, maxModelLen: 8192 } } }) as LocalEngine;
    app = createApp({ engine: wide, config: parseServerConfig({ modelDir: dir, servedModelName: 'smolvlm2' }), mediaFetcher: createMediaFetcher(resolveMediaConfig({})) });
  });
  afterAll(async () => {
    await engine?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('the prompt shows the frames transformers samples (30, not 16), at their times', async () => {
    const reference = expected.cases.find((c) => c.total_frames === 300 && c.fps === 10)!;
    // The writer's AVI runs at 10 fps: 300 frames of four flat colours (jpeg-js encodes slowly).
    const colours = [[250, 0, 0], [0, 250, 0], [0, 0, 250], [250, 250, 0]].map((rgb) => flatJpeg(40, 24, rgb));
    const frames = Array.from({ length: 300 }, (_, i) => colours[i % colours.length]);
    const url = `data:video/x-msvideo;base64,${Buffer.from(avi(frames, 40, 24, 'MJPG')).toString('base64')}`;
    const res = await postJson(app, '/tokenize', {
      model: 'smolvlm2',
      messages: [{ role: 'user', content: [{ type: 'video_url', video_url: { url } }, { type: 'text', text: 'What happens?' }] }],
    });
    expect(res.status).toBe(200);
    const text = engine.tokenizer.decode(((await res.json()) as { tokens: number[] }).tokens, { skipSpecialTokens: false });
    expect(text).toContain('series of thirty frames from a 0:00:30 [H:MM:SS] video');
    const stamps = [...text.matchAll(/Frame from (\d\d):(\d\d):/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
    expect(stamps).toEqual(reference.indices.map((index) => Math.trunc(index / 10)));
  });
});
