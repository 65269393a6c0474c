/**
 * Media bombs in data: URLs (issue 24): parts whose headers declare far more pixels or
 * audio than they weigh. Each is refused from its header with a small 400 naming the
 * bound, nothing is decoded (a spy on the decoder counts), and the server keeps serving
 * meanwhile (heartbeat.ts: event-loop lag, /health, a running stream).
 */
import { Buffer } from 'node:buffer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerConfig, type ServerConfig } from '../../src/config/server-config.js';
import type { Engine } from '../../src/engine/types.js';
import { createApp } from '../../src/http/app.js';
import { resolveMediaConfig, type MediaConfigInput, type MediaDecoder } from '../../src/media/index.js';
import { createNodeMediaFetcher, createWorkerMediaDecoder } from '../../src/media/node.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { pcm16Wav, zeroPng } from '../media/helpers/fixtures.js';
import { SMOLVLM_DIR } from '../multimodal/fixtures.js';
import { expectNoStall, withHeartbeat } from './heartbeat.js';
import { MODEL, MODEL_DIR, golden, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
let vlm: Engine;
const decoder = createWorkerMediaDecoder({ timeoutMs: 20_000 });
let decodes = 0;
const counting: MediaDecoder = {
  decode(media, options) {
    decodes += 1;
    return decoder.decode(media, options);
  },
};

beforeAll(async () => {
  [engine, vlm] = await Promise.all([loadEngine(), createNodeEngine({ modelDir: SMOLVLM_DIR, servedModelName: 'smolvlm' })]);
});
afterAll(async () => {
  await decoder.close();
  await Promise.all([engine?.dispose(), vlm?.dispose()]);
});

function appOn(model: Engine, media: MediaConfigInput = {}, config: Partial<ServerConfig> = {}) {
  const dir = model === engine ? MODEL_DIR : SMOLVLM_DIR;
  const name = model === engine ? MODEL : 'smolvlm';
  return createApp({
    engine: model,
    config: parseServerConfig({ modelDir: dir, servedModelName: name, ...config }),
    mediaFetcher: createNodeMediaFetcher(resolveMediaConfig(media), { decoder: counting }),
  });
}

const dataUrl = (mime: string, bytes: Uint8Array) => `data:${mime};base64,${Buffer.from(bytes).toString('base64')}`;
// Built once, outside the heartbeat: the client's work, not the server's.
const slowWav = dataUrl('audio/wav', pcm16Wav([new Int16Array(1800)], 1)); // 3.6 KB declaring 30 minutes at 1 Hz
const bigZeros = dataUrl('image/png', zeroPng(6324, 6324)); // 40 MP of zeros
const vlmZeros = dataUrl('image/png', zeroPng(6000, 6000));

/** Posts under the heartbeat; returns the status and parsed error body, asserting the body is small and nothing stalled. */
async function refused(app: ReturnType<typeof appOn>, path: string, body: unknown) {
  const payload = JSON.stringify(body);
  decodes = 0;
  const { result, report } = await withHeartbeat(testApp(engine), async () => {
    const response = await postJson(app, path, payload);
    return { status: response.status, text: await response.text() };
  });
  expectNoStall(report);
  expect(result.text.length, 'error body size').toBeLessThan(2000);
  expect(decodes, 'parts decoded').toBe(0);
  return { status: result.status, error: (JSON.parse(result.text) as { error: { message: string; param: string | null } }).error };
}

const chat = (content: unknown[], model = MODEL) => ({ model, messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, ...content] }], max_tokens: 2 });

describe('audio declaring more than it weighs', () => {
  it('16 WAV parts at 1 Hz (30 min each): the request total is refused before decoding', async () => {
    const parts = Array.from({ length: 16 }, () => ({ type: 'audio_url', audio_url: slowWav }));
    const { status, error } = await refused(appOn(engine), '/generate', { prompt: [{ type: 'text', text: 'Hear' }, ...parts], max_tokens: 2 });
    expect(status).toBe(400);
    expect(error.param).toBe('prompt[2].audio_url');
    expect(error.message).toMatch(/declares 3600\.0 s up to this part \(57600000 samples at 16000 Hz\), more than the 1800 s .*MEDIA_MAX_AUDIO_SECONDS_PER_REQUEST/);
  });

  it('as chat input_audio too, and one such part alone is refused by a text-only model undecoded', async () => {
    const base64 = slowWav.slice(slowWav.indexOf(',') + 1);
    const many = await refused(appOn(engine), '/v1/chat/completions', chat(Array.from({ length: 16 }, () => ({ type: 'input_audio', input_audio: { data: base64, format: 'wav' } }))));
    expect(many.status).toBe(400);
    expect(many.error.message).toMatch(/MEDIA_MAX_AUDIO_SECONDS_PER_REQUEST/);
    const one = await refused(appOn(engine), '/v1/chat/completions', chat([{ type: 'input_audio', input_audio: { data: base64, format: 'wav' } }]));
    expect(one.status).toBe(400);
    expect(one.error.message).toMatch(/this model accepts text only; the audio was fetched and its header checked \(not decoded\)/);
  });
});

describe('images declaring more pixels than they weigh', () => {
  it('16 PNGs of 6324×6324 zeros: the request total is refused before decoding', async () => {
    const parts = Array.from({ length: 16 }, () => ({ type: 'image_url', image_url: { url: bigZeros } }));
    const { status, error } = await refused(appOn(engine), '/v1/chat/completions', chat(parts));
    expect(status).toBe(400);
    expect(error.param).toBe('messages[0].content[2].image_url.url');
    expect(error.message).toMatch(/declare 79985952 pixels up to this part, more than the 50000000 pixels a request may carry \(MEDIA_MAX_PIXELS_PER_REQUEST\)/);
  });

  it('one image past the per-image limit is refused from its header', async () => {
    const { status, error } = await refused(appOn(engine, { maxImagePixels: 10_000_000 }), '/v1/chat/completions', chat([{ type: 'image_url', image_url: { url: bigZeros } }]));
    expect(status).toBe(400);
    expect(error.message).toMatch(/declares 6324×6324 pixels, more than the 10000000-pixel limit; it was not decoded/);
  });

  it('on a vision-language model, 8 × 6000×6000: the pixel total by default; the context from the declared sizes when pixels are allowed', async () => {
    const parts = Array.from({ length: 8 }, () => ({ type: 'image_url', image_url: { url: vlmZeros } }));
    const byPixels = await refused(appOn(vlm), '/v1/chat/completions', chat(parts, 'smolvlm'));
    expect(byPixels.status).toBe(400);
    expect(byPixels.error.message).toMatch(/MEDIA_MAX_PIXELS_PER_REQUEST/);
    // Each 6000×6000 image becomes 3 × 3 tiles and the global image: at least 61 tokens.
    const byContext = await refused(appOn(vlm, { maxPixelsPerRequest: 400_000_000 }, { maxSeqLen: 256 }), '/v1/chat/completions', chat(parts, 'smolvlm'));
    expect(byContext.status).toBe(400);
    expect(byContext.error.param).toBe('messages');
    expect(byContext.error.message).toBe(
      "This model's maximum context length is 256 tokens. However, you requested at least 488 tokens in the messages, Please reduce the length of the messages.",
    );
  });

  it('on a vision-language model, images past MEDIA_MAX_IMAGES_PER_PROMPT or its tiles are refused undecoded', async () => {
    const nine = Array.from({ length: 9 }, () => ({ type: 'image_url', image_url: { url: vlmZeros } }));
    const count = await refused(appOn(vlm, { maxPixelsPerRequest: 400_000_000 }), '/v1/chat/completions', chat(nine, 'smolvlm'));
    expect(count.error.message).toMatch(/at most 8 images \(MEDIA_MAX_IMAGES_PER_PROMPT\), got 9/);
    const tiles = await refused(appOn(vlm, { maxImageTiles: 4 }), '/v1/chat/completions', chat([{ type: 'image_url', image_url: { url: vlmZeros } }], 'smolvlm'));
    expect(tiles.error.message).toMatch(/becomes 3 x 3 tiles plus the global image, more than the 4 frames/);
  });
});

describe('a large image within the bounds, on a vision-language model', () => {
  it('is decoded and resized on the media thread: /health and the event loop keep answering within a few hundred ms', async () => {
    // 5000×5000 (25 MP, under MEDIA_MAX_IMAGE_PIXELS): decoding it takes seconds, and so
    // does resizing it (Pillow's filter over every source pixel) to the 96-pixel edge.
    const url = dataUrl('image/png', zeroPng(5000, 5000));
    let tasks = 0;
    const threaded: MediaDecoder = {
      decode: (media, options) => decoder.decode(media, options),
      runTask: (task, signal) => {
        tasks += 1;
        return decoder.runTask!(task, signal);
      },
    };
    const app = createApp({
      engine: vlm,
      config: parseServerConfig({ modelDir: SMOLVLM_DIR, servedModelName: 'smolvlm' }),
      mediaFetcher: createNodeMediaFetcher(resolveMediaConfig(), { decoder: threaded }),
    });
    const { result, report } = await withHeartbeat(testApp(engine), async () => {
      const response = await postJson(app, '/v1/chat/completions', chat([{ type: 'image_url', image_url: { url } }], 'smolvlm'));
      return { status: response.status, body: (await response.json()) as { usage: { prompt_tokens: number } } };
    });
    expect(result.status).toBe(200);
    // 3 × 3 tiles and the global image: 9 × (4 + 2) + 4 + 3 image and marker tokens, and the text.
    expect(result.body.usage.prompt_tokens).toBeGreaterThan(61);
    expect(tasks, 'image processing jobs on the media thread').toBe(1);
    // A few hundred ms: the loop is never held longer (CPU-backed; see heartbeat.ts).
    expectNoStall(report, 400);
  });
});

describe('after the bombs', () => {
  it('the server serves normally', async () => {
    const response = await postJson(appOn(engine), '/v1/completions', { model: MODEL, prompt: golden.prompt, temperature: 0, max_tokens: 100 });
    expect(response.status).toBe(200);
    expect((await response.json()).choices[0].text).toBe(golden.completion_text);
  });
});
