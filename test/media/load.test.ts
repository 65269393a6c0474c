/**
 * loadPromptMedia / loadChatMedia end to end: parts parsed, fetched from a real server
 * and the media directory, decoded; refusals name the part; a text-only model refuses
 * media once it was fetched and its header read, before anything is decoded.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveMediaConfig, type MediaConfigInput } from '../../src/media/config.js';
import { MediaError } from '../../src/media/errors.js';
import { loadChatMedia, loadPromptMedia, refuseUnacceptedMedia } from '../../src/media/load.js';
import { createNodeMediaFetcher } from '../../src/media/node.js';
import type { DecodedAudio, DecodedImage } from '../../src/media/types.js';
import { inlineMediaDecoder, type MediaDecoder } from '../../src/media/decode/media-decoder.js';
import { SMALL_RGB, pcm16Wav, smallPng } from './helpers/fixtures.js';
import { serve, startMediaServer, type MediaServer } from './helpers/media-server.js';

let server: MediaServer;
let mediaDir: string;
const wav = pcm16Wav([new Int16Array([0, 8192, -8192, 16384])], 16000);

beforeAll(async () => {
  mediaDir = await mkdtemp(path.join(tmpdir(), 'media-load-'));
  await writeFile(path.join(mediaDir, 'test.png'), smallPng());
  server = await startMediaServer({
    '/voice.wav': serve(wav, 'application/octet-stream'),
    '/page.png': serve('<html>hi</html>', 'image/png'),
    '/slow.png': (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.write(smallPng().subarray(0, 10));
    },
  });
});

afterAll(async () => {
  await server.close();
  await rm(mediaDir, { recursive: true, force: true });
});

function fetcher(overrides: MediaConfigInput = {}, decoder?: MediaDecoder) {
  return createNodeMediaFetcher(
    resolveMediaConfig({ mediaDir, allowedDomains: ['media.test'], allowPrivateAddresses: ['127.0.0.1/32'], totalTimeoutMs: 3000, ...overrides }),
    { resolve: async () => ['127.0.0.1'], ...(decoder !== undefined ? { decoder } : {}) },
  );
}

describe('loadPromptMedia', () => {
  it('loads the MindIE multimodal sample: a local PNG and a remote WAV, decoded', async () => {
    const loaded = await loadPromptMedia(
      [
        { type: 'text', text: 'My name is Olivier and I' },
        { type: 'image_url', image_url: path.join(mediaDir, 'test.png') },
        { type: 'audio_url', audio_url: `http://media.test:${server.port}/voice.wav` },
      ],
      fetcher(),
    );
    expect(loaded.map((m) => [m.param, m.kind, m.format])).toEqual([
      ['prompt[1].image_url', 'image', 'png'],
      ['prompt[2].audio_url', 'audio', 'wav'],
    ]);
    const image = loaded[0].decoded as DecodedImage;
    expect(Array.from(image.rgb)).toEqual(SMALL_RGB.pixels.flat());
    const audio = loaded[1].decoded as DecodedAudio;
    expect(Array.from(audio.samples)).toEqual([0, 0.25, -0.25, 0.5]);
    await server.drained();
  });

  it('names the failing part in param and message', async () => {
    const error = await loadPromptMedia(
      [{ type: 'text', text: 'hi' }, { type: 'image_url', image_url: `http://media.test:${server.port}/page.png` }],
      fetcher(),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MediaError);
    expect((error as MediaError).param).toBe('prompt[1].image_url');
    expect((error as MediaError).message).toMatch(/^prompt\[1\]\.image_url: the image is an HTML page/);
  });

  it('refuses more media parts than allowed, before fetching any', async () => {
    const accepted = server.accepted();
    const parts = Array.from({ length: 3 }, () => ({ type: 'image_url', image_url: `http://media.test:${server.port}/page.png` }));
    await expect(loadPromptMedia(parts, fetcher({ maxPartsPerRequest: 2 }))).rejects.toMatchObject({ reason: 'too_many_parts', param: 'prompt[2].image_url' });
    expect(server.accepted()).toBe(accepted);
  });

  it('on one refusal, cancels the other downloads and leaves no connection open', async () => {
    const started = Date.now();
    const error = await loadPromptMedia(
      [
        { type: 'image_url', image_url: `http://media.test:${server.port}/slow.png` },
        { type: 'image_url', image_url: 'http://not-listed.example/x.png' },
      ],
      fetcher({ totalTimeoutMs: 10_000 }),
    ).catch((e: unknown) => e);
    expect((error as MediaError).reason).toBe('host_not_allowed');
    expect((error as MediaError).param).toBe('prompt[1].image_url');
    expect(Date.now() - started).toBeLessThan(2000);
    await server.drained();
  });

  it('rejects with the client abort reason when the request is cancelled', async () => {
    const controller = new AbortController();
    const pending = loadPromptMedia([{ type: 'image_url', image_url: `http://media.test:${server.port}/slow.png` }], fetcher(), { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('client closed')), 50);
    await expect(pending).rejects.toThrow('client closed');
    await server.drained();
  });
});

describe('loadChatMedia and text-only models', () => {
  const messages = [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: 'test.png' } }] }];

  it('loads chat content parts', async () => {
    const loaded = await loadChatMedia(messages, fetcher());
    expect(loaded.map((m) => [m.param, m.format, m.byteLength])).toEqual([['messages[0].content[1].image_url.url', 'png', smallPng().length]]);
  });

  it('refuses media for a text-only model from its header, naming the part, and decodes nothing', async () => {
    const decoded: string[] = [];
    const spying = fetcher({}, { decode: async (media, options) => (decoded.push(media.format), inlineMediaDecoder.decode(media, options)) });
    const refusal = loadChatMedia(messages, spying, { admit: (parts) => refuseUnacceptedMedia(parts) });
    await expect(refusal).rejects.toThrow(
      expect.objectContaining({
        reason: 'modality_not_supported',
        param: 'messages[0].content[1].image_url.url',
        message:
          'messages[0].content[1].image_url.url: this model accepts text only; the image was fetched and its header checked (not decoded), but the model cannot use it',
      }),
    );
    expect(decoded).toEqual([]);
    await loadChatMedia(messages, spying, { admit: (parts) => refuseUnacceptedMedia(parts, ['image']) });
    expect(decoded).toEqual(['png']);
    expect(() => refuseUnacceptedMedia([])).not.toThrow();
  });

  it('refuses an unusable part for a text-only model with the media error, not the modality one', async () => {
    const bad = [{ role: 'user', content: [{ type: 'image_url', image_url: { url: '../etc/passwd' } }] }];
    await expect(loadChatMedia(bad, fetcher())).rejects.toMatchObject({ reason: 'path_outside_media_dir' });
  });
});
