/**
 * SmolVLM2 folders with real video: an H.264 MP4 in a chat video_url part or a /generate
 * prompt is decoded by the npm-shipped ffmpeg, sampled by the folder's video_sampling
 * (fps 2 here: a 3 s clip gives six frames, each stamped with index / fps), and the text
 * is generated from those frames. A broken video is a 400 naming the part, and the server
 * keeps serving.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hono } from 'hono';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createApp } from '../../src/http/app.js';
import { resolveMediaConfig } from '../../src/media/index.js';
import { createNodeMediaFetcher } from '../../src/media/node.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { expectError, postJson } from '../http/helpers.js';
import { CODECS, encodeFrames, encodeVideo } from '../media/helpers/ffmpeg-encode.js';
import { smolvlm2Folder } from './fixtures.js';

const MODEL = 'smolvlm2';
let dir: string;
let engine: LocalEngine;
let app: Hono;

function dataUrl(bytes: Uint8Array): string {
  return `data:video/mp4;base64,${Buffer.from(bytes).toString('base64')}`;
}
/** 12 frames at 4 fps (3 s) of the synthetic quadrant pattern. */
function mp4Url(codec = CODECS.h264): string {
  return dataUrl(encodeVideo(codec, 12, 64, 48, 4));
}
/** 12 frames at 4 fps of saturated flat colours: red, green, blue, yellow, red, ... */
function flatMp4Url(): string {
  const colours = [[250, 0, 0], [0, 250, 0], [0, 0, 250], [250, 250, 0]];
  const frames = Array.from({ length: 12 }, (_, i) => new Uint8Array(64 * 48 * 3).map((_, k) => colours[i % 4][k % 3]));
  return dataUrl(encodeFrames(CODECS.h264, frames, 64, 48, 4));
}
const VIDEO_A = mp4Url();
const VIDEO_B = flatMp4Url();

beforeAll(async () => {
  dir = await smolvlm2Folder({ video_sampling: { fps: 2, max_frames: 64, video_size: { longest_edge: 48 } } });
  engine = await createNodeEngine({ modelDir: dir, servedModelName: MODEL });
  const mediaFetcher = createNodeMediaFetcher(resolveMediaConfig({ videoFrames: 16 }));
  app = createApp({ engine, config: parseServerConfig({ modelDir: dir, servedModelName: MODEL }), mediaFetcher });
});
afterAll(async () => {
  await engine?.dispose();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

async function chatWithVideo(url: string, extra: Record<string, unknown> = {}) {
  const res = await postJson(app, '/v1/chat/completions', {
    model: MODEL,
    messages: [{ role: 'user', content: [{ type: 'video_url', video_url: { url } }, { type: 'text', text: 'What happens?' }] }],
    max_tokens: 8,
    temperature: 0,
    ...extra,
  });
  if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
  return (await res.json()) as { choices: Array<{ message: { content: string }; logprobs?: { content: Array<{ logprob: number }> } }>; usage: { prompt_tokens: number }; prompt_logprobs?: Array<Record<string, unknown> | null> };
}

async function generateWithVideo(url: string): Promise<string> {
  const res = await postJson(app, '/generate', {
    prompt: [{ type: 'text', text: '<|im_start|>User: ' }, { type: 'video_url', video_url: url }, { type: 'text', text: 'What happens?<end_of_utterance>\nAssistant:' }],
    max_tokens: 8,
    temperature: 0,
  });
  if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { text: string[] }).text[0];
}

describe('SmolVLM2 with H.264 video', () => {
  it('reads video_sampling from the folder', () => {
    expect(engine.info.videoSampling).toEqual({ rule: 'fps', fps: 2, maxFrames: 64 });
  });

  it('chat video_url: six frames sampled at 2 fps, stamped index / fps, behind SmolVLM\'s video prompt', async () => {
    const body = await chatWithVideo(VIDEO_A, { prompt_logprobs: 0 });
    const frame = '<fake_token_around_image><global-img>' + '<image>'.repeat(4) + '<fake_token_around_image>';
    // Frames 0, 2, 4, 6, 8, 11 of 12 at 4 fps: 0, 0.5, 1, 1.5, 2, 2.75 s.
    const stamps = ['00:00', '00:00', '00:01', '00:01', '00:02', '00:02'];
    const text =
      '<|im_start|>User: You are provided the following series of six frames from a 0:00:03 [H:MM:SS] video.\n' +
      stamps.map((stamp) => `\nFrame from ${stamp}:${frame}`).join('') +
      '\n\nWhat happens?<end_of_utterance>\nAssistant:';
    const want = engine.tokenizer.encode(text, { addSpecialTokens: false });
    const got = body.prompt_logprobs!.map((entry, index) => (index === 0 ? want[0] : Number(Object.keys(entry!)[0])));
    expect(got).toEqual(want);
    expect(body.usage.prompt_tokens).toBe(want.length);
  });

  it('different videos give different outputs, the same video the same, on chat and /generate', async () => {
    const options = { logprobs: true, top_logprobs: 1 };
    const [first, again, other] = await Promise.all([chatWithVideo(VIDEO_A, options), chatWithVideo(VIDEO_A, options), chatWithVideo(VIDEO_B, options)]);
    expect(again.choices[0].message.content).toBe(first.choices[0].message.content);
    expect(again.choices[0].logprobs!.content[0].logprob).toBe(first.choices[0].logprobs!.content[0].logprob);
    expect(other.choices[0].message.content).not.toBe(first.choices[0].message.content);
    expect(other.choices[0].logprobs!.content[0].logprob).not.toBeCloseTo(first.choices[0].logprobs!.content[0].logprob, 3);
    const [generatedA, generatedB] = [await generateWithVideo(VIDEO_A), await generateWithVideo(VIDEO_B)];
    expect(generatedA).not.toBe(generatedB);
    // /generate echoes the prompt as written (the placeholder), then the same greedy text as chat.
    expect(generatedA.endsWith(first.choices[0].message.content)).toBe(true);
  });

  it('H.265 and AV1 clips are taken too', async () => {
    for (const codec of [CODECS.hevc, CODECS.av1]) {
      const body = await chatWithVideo(mp4Url(codec));
      expect(body.choices[0].message.content.length).toBeGreaterThan(0);
    }
  });

  it('a truncated MP4 is a 400 naming the part, and the server keeps serving', async () => {
    const bytes = Buffer.from(VIDEO_A.slice(VIDEO_A.indexOf(',') + 1), 'base64');
    const truncated = `data:video/mp4;base64,${bytes.subarray(0, Math.floor(bytes.length / 2)).toString('base64')}`;
    const message = await expectError(
      postJson(app, '/v1/chat/completions', {
        model: MODEL,
        messages: [{ role: 'user', content: [{ type: 'video_url', video_url: { url: truncated } }, { type: 'text', text: 'x' }] }],
      }),
      400,
      'BadRequestError',
      'messages[0].content[0].video_url.url',
    );
    expect(message).toMatch(/MP4 video could not be decoded/);
    await expectError(
      postJson(app, '/generate', { prompt: [{ type: 'text', text: 'x' }, { type: 'video_url', video_url: truncated }], max_tokens: 2 }),
      400,
      'BadRequestError',
      'prompt[1].video_url',
    );
    expect((await app.request('/health')).status).toBe(200);
    expect((await chatWithVideo(VIDEO_A)).choices[0].message.content.length).toBeGreaterThan(0);
  });
});
