/**
 * /tokenize with media parts counts their tokens as /v1/chat/completions does (vLLM's
 * /tokenize gives the prompt the model is fed): images on the SmolVLM fixture, audio on
 * the Qwen2-Audio fixture. The reference ids are the fixtures' (the Idefics3 and Qwen2-Audio
 * rules, which transformers' processors reproduce: scripts/transformers5/build_folders.py).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hono } from 'hono';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createApp } from '../../src/http/app.js';
import { createMediaFetcher, resolveMediaConfig } from '../../src/media/index.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { expectError, postJson } from './helpers.js';
import { imageDataUrl, reference, SMOLVLM_DIR } from '../multimodal/fixtures.js';
import { AUDIO_DIR, audioBytes, audioReference, QWEN2_AUDIO_DIR } from '../multimodal/audio-fixtures.js';

let vision: LocalEngine;
let audio: LocalEngine;
let visionApp: Hono;
let audioApp: Hono;

beforeAll(async () => {
  vision = await createNodeEngine({ modelDir: SMOLVLM_DIR, servedModelName: 'smolvlm' });
  audio = await createNodeEngine({ modelDir: QWEN2_AUDIO_DIR, servedModelName: 'qwen2-audio' });
  visionApp = createApp({ engine: vision, config: parseServerConfig({ modelDir: SMOLVLM_DIR, servedModelName: 'smolvlm' }) });
  audioApp = createApp({
    engine: audio,
    config: parseServerConfig({ modelDir: QWEN2_AUDIO_DIR, servedModelName: 'qwen2-audio' }),
    mediaFetcher: createMediaFetcher(resolveMediaConfig({ mediaDir: AUDIO_DIR })),
  });
});
afterAll(async () => {
  await vision?.dispose();
  await audio?.dispose();
});

async function tokenize(app: Hono, body: Record<string, unknown>) {
  const res = await postJson(app, '/tokenize', body);
  if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
  return (await res.json()) as { count: number; max_model_len: number; tokens: number[] };
}

async function promptTokens(app: Hono, body: Record<string, unknown>): Promise<number> {
  const res = await postJson(app, '/v1/chat/completions', { ...body, max_tokens: 1, temperature: 0 });
  if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
}

describe('/tokenize with media parts', () => {
  it('image_url parts: the expanded prompt, the ids the chat route feeds the model', async () => {
    for (const generation of reference('smolvlm').generations) {
      const content = [
        ...generation.images.map((name) => ({ type: 'image_url', image_url: { url: imageDataUrl(name) } })),
        { type: 'text', text: generation.question },
      ];
      const body = { model: 'smolvlm', messages: [{ role: 'user', content }] };
      const tokens = await tokenize(visionApp, body);
      expect(tokens.tokens).toEqual(generation.prompt_token_ids);
      expect(tokens.count).toBe(await promptTokens(visionApp, body));
      // More than the text alone: each image is its tiles' tokens, not one placeholder.
      expect(tokens.count).toBeGreaterThan(generation.images.length * reference('smolvlm').image_seq_len!);
    }
  });

  it('audio parts: the audio tokens counted as the chat route does', async () => {
    const chats = audioReference().generations.filter((generation) => generation.kind === 'chat' && generation.audio.every((name) => name.endsWith('.wav')));
    expect(chats.length).toBeGreaterThan(0);
    for (const generation of chats) {
      const content = [
        ...generation.audio.map((name) => ({ type: 'input_audio', input_audio: { data: Buffer.from(audioBytes(name)).toString('base64'), format: 'wav' } })),
        { type: 'text', text: generation.question },
      ];
      const body = { model: 'qwen2-audio', messages: [{ role: 'user', content }] };
      const tokens = await tokenize(audioApp, body);
      expect(tokens.tokens).toEqual(generation.prompt_token_ids);
      expect(tokens.count).toBe(await promptTokens(audioApp, body));
    }
  });

  it('a part the model does not take is refused as in the chat route, naming it', async () => {
    const body = { model: 'qwen2-audio', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: imageDataUrl(reference('smolvlm').generations[0].images[0]) } }, { type: 'text', text: 'hi' }] }] };
    const tokenizeError = await expectError(postJson(audioApp, '/tokenize', body), 400, 'BadRequestError', 'messages[0].content[0].image_url.url');
    const chatError = await expectError(postJson(audioApp, '/v1/chat/completions', body), 400, 'BadRequestError', 'messages[0].content[0].image_url.url');
    expect(tokenizeError).toBe(chatError);
  });
});
