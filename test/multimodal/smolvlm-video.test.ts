/**
 * SmolVLM video: a video_url part's sampled frames go in as single images behind
 * SmolVLM's video prompt (frame count in words, H:MM:SS duration, "Frame from MM:SS:"
 * per frame). The fixture folder copied with model_type "smolvlm" and SmolVLM2's chat
 * template, whose {"type": "video"} parts write <video>; Idefics3 (no video) refuses them.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hono } from 'hono';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createApp } from '../../src/http/app.js';
import { englishNumber } from '../../src/multimodal/english-number.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { expectError, postJson } from '../http/helpers.js';
import { avi, flatJpeg } from '../media/helpers/video-writers.js';
import { SMOLVLM_DIR, smolvlm2Folder } from './fixtures.js';

let dir: string;
let engine: LocalEngine;
let app: Hono;

/** An MJPEG AVI at 10 fps whose frames are flat colours. */
function videoUrl(colours: number[][]): string {
  const frames = colours.map((rgb) => flatJpeg(40, 24, rgb));
  return `data:video/x-msvideo;base64,${Buffer.from(avi(frames, 40, 24, 'MJPG')).toString('base64')}`;
}

beforeAll(async () => {
  dir = await smolvlm2Folder();
  engine = await createNodeEngine({ modelDir: dir, servedModelName: 'smolvlm2' });
  app = createApp({ engine, config: parseServerConfig({ modelDir: dir, servedModelName: 'smolvlm2' }) });
});
afterAll(async () => {
  await engine?.dispose();
  await rm(dir, { recursive: true, force: true });
});

async function chatWithVideo(url: string, extra: Record<string, unknown> = {}) {
  const res = await postJson(app, '/v1/chat/completions', {
    model: 'smolvlm2',
    messages: [{ role: 'user', content: [{ type: 'video_url', video_url: { url } }, { type: 'text', text: 'What happens?' }] }],
    max_tokens: 8,
    temperature: 0,
    ...extra,
  });
  if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
  return (await res.json()) as { choices: Array<{ message: { content: string } }>; usage: { prompt_tokens: number }; prompt_logprobs?: Array<Record<string, unknown> | null> };
}

describe('SmolVLM video', () => {
  it('numbers in words as num2words writes them', () => {
    expect([4, 16, 21, 40, 105, 1000].map(englishNumber)).toEqual(['four', 'sixteen', 'twenty-one', 'forty', 'one hundred and five', 'one thousand']);
  });

  it('a video part becomes the intro, one timestamped single image per frame and the outro', async () => {
    expect(engine.info.acceptedMedia).toEqual(['image', 'video']);
    const body = await chatWithVideo(videoUrl([[250, 0, 0], [0, 250, 0], [0, 0, 250], [250, 250, 0]]), { prompt_logprobs: 0 });
    const frame = '<fake_token_around_image><global-img>' + '<image>'.repeat(4) + '<fake_token_around_image>';
    const text =
      '<|im_start|>User: You are provided the following series of four frames from a 0:00:00 [H:MM:SS] video.\n' +
      '\nFrame from 00:00:' + frame + '\nFrame from 00:00:' + frame + '\nFrame from 00:00:' + frame + '\nFrame from 00:00:' + frame +
      '\n\nWhat happens?<end_of_utterance>\nAssistant:';
    const want = engine.tokenizer.encode(text, { addSpecialTokens: false });
    const got = body.prompt_logprobs!.map((entry, index) => (index === 0 ? want[0] : Number(Object.keys(entry!)[0])));
    expect(got).toEqual(want);
    expect(body.usage.prompt_tokens).toBe(want.length);
  });

  it('different videos give different outputs, the same video the same', async () => {
    const a = videoUrl([[250, 0, 0], [0, 250, 0], [0, 0, 250], [250, 250, 0]]);
    const b = videoUrl([[10, 10, 10], [120, 120, 120], [200, 30, 200], [5, 90, 160]]);
    const [first, again, other] = await Promise.all([chatWithVideo(a), chatWithVideo(a), chatWithVideo(b)]);
    expect(again.choices[0].message.content).toBe(first.choices[0].message.content);
    expect(other.choices[0].message.content).not.toBe(first.choices[0].message.content);
  });

  it('Idefics3 (no video in its processor) refuses a video part from its header, undecoded', async () => {
    const idefics = await createNodeEngine({ modelDir: SMOLVLM_DIR, servedModelName: 'idefics' });
    try {
      const plain = createApp({ engine: idefics, config: parseServerConfig({ modelDir: SMOLVLM_DIR, servedModelName: 'idefics' }) });
      const message = await expectError(
        postJson(plain, '/v1/chat/completions', {
          model: 'idefics',
          messages: [{ role: 'user', content: [{ type: 'video_url', video_url: { url: videoUrl([[1, 2, 3]]) } }, { type: 'text', text: 'x' }] }],
        }),
        400,
        'BadRequestError',
        'messages[0].content[0].video_url.url',
      );
      expect(message).toMatch(/accepts image input only; the video was fetched and its header checked \(not decoded\)/);
    } finally {
      await idefics.dispose();
    }
  });
});
