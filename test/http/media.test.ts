/**
 * Media parts through the HTTP API, end to end: the real engine (text-only), the Node
 * media fetcher allowed to reach 127.0.0.1, and a real HTTP server on loopback. A media
 * part must be checked, fetched and its header read like for a multimodal model, and then
 * refused, undecoded, because the model takes text only; every broken rule is a 400 naming the part.
 */
import { Buffer } from 'node:buffer';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { createApp } from '../../src/http/app.js';
import { parseServerConfig } from '../../src/config/server-config.js';
import { resolveMediaConfig } from '../../src/media/index.js';
import { createNodeMediaFetcher } from '../../src/media/node.js';
import { HTML_PAGE, pcm16Wav, smallPng } from '../media/helpers/fixtures.js';
import { verbatimFlac } from '../media/helpers/flac-writer.js';
import { serve, startMediaServer, type MediaServer, type Route } from '../media/helpers/media-server.js';
import { MODEL, MODEL_DIR, expectError, golden, loadEngine, postJson } from './helpers.js';

const TEXT_ONLY = /: this model accepts text only; the (image|audio|video) was fetched and its header checked \(not decoded\), but the model cannot use it$/;

let engine: Engine;
let server: MediaServer;
/** Requests received per path, to tell "fetched" from "refused before any connection". */
const hits: Record<string, number> = {};
const png = smallPng();

function counted(path: string, route: Route): Route {
  return (req, res) => {
    hits[path] = (hits[path] ?? 0) + 1;
    route(req, res);
  };
}

beforeAll(async () => {
  engine = await loadEngine();
  server = await startMediaServer({
    '/cat.png': counted('/cat.png', serve(png, 'image/png')),
    '/page.png': counted('/page.png', serve(HTML_PAGE, 'image/png')),
    '/tone.wav': counted('/tone.wav', serve(pcm16Wav([new Int16Array(1600).fill(1000)], 16000), 'audio/wav')),
    '/slow.png': counted('/slow.png', (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
      res.write(png.subarray(0, 8)); // then stalls until the client goes away
    }),
  });
});
afterAll(async () => {
  await server?.close();
  await engine?.dispose();
});
beforeEach(() => {
  for (const key of Object.keys(hits)) delete hits[key];
});

/** 127.0.0.1 is whitelisted and exempted from the private-address block; 127.0.0.2 only whitelisted. */
function mediaApp() {
  const media = resolveMediaConfig({
    allowedDomains: ['127.0.0.1', '127.0.0.2'],
    allowPrivateAddresses: ['127.0.0.1/32'],
    totalTimeoutMs: 5000,
  });
  return createApp({
    engine,
    config: parseServerConfig({ modelDir: MODEL_DIR, servedModelName: MODEL }),
    mediaFetcher: createNodeMediaFetcher(media),
  });
}

const url = (path: string) => `${server.origin}${path}`;
const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

function generate(parts: unknown[], extra: Record<string, unknown> = {}) {
  return postJson(mediaApp(), '/generate', { prompt: [{ type: 'text', text: 'Describe' }, ...parts], max_tokens: 2, ...extra });
}

function chat(parts: unknown[], extra: Record<string, unknown> = {}) {
  return postJson(mediaApp(), '/v1/chat/completions', {
    model: MODEL,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, ...parts] }],
    max_tokens: 2,
    ...extra,
  });
}

describe('POST /generate with media parts', () => {
  it('fetches a whitelisted PNG, reads its header, then refuses it: the model is text-only', async () => {
    const message = await expectError(generate([{ type: 'image_url', image_url: url('/cat.png') }]), 400, 'BadRequestError', 'prompt[1].image_url');
    expect(message).toMatch(/^prompt\[1\]\.image_url: this model accepts text only; the image was fetched and its header checked/);
    expect(hits['/cat.png']).toBe(1);
  });

  it('accepts the object form {"url": ...} and names its url field', async () => {
    const message = await expectError(
      generate([{ type: 'image_url', image_url: { url: url('/cat.png') } }]),
      400,
      'BadRequestError',
      'prompt[1].image_url.url',
    );
    expect(message).toMatch(TEXT_ONLY);
    expect(hits['/cat.png']).toBe(1);
  });

  it('fetches audio too before refusing it', async () => {
    const message = await expectError(generate([{ type: 'audio_url', audio_url: url('/tone.wav') }]), 400, 'BadRequestError', 'prompt[1].audio_url');
    expect(message).toMatch(/^prompt\[1\]\.audio_url: this model accepts text only; the audio was fetched and its header checked/);
    expect(hits['/tone.wav']).toBe(1);
  });

  it('refuses a streaming request with a 400 before any event', async () => {
    const response = await generate([{ type: 'image_url', image_url: url('/cat.png') }], { stream: true });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect((await response.json()).param).toBe('prompt[1].image_url');
  });

  it('refuses a host that is not on the whitelist, without connecting', async () => {
    const message = await expectError(
      generate([{ type: 'image_url', image_url: 'http://media.example.com/cat.png' }]),
      400,
      'BadRequestError',
      'prompt[1].image_url',
    );
    expect(message).toBe('prompt[1].image_url: the host "media.example.com" is not in ALLOWED_MEDIA_DOMAINS_ENV');
  });

  it('refuses a whitelisted but private address', async () => {
    const message = await expectError(
      generate([{ type: 'image_url', image_url: `http://127.0.0.2:${server.port}/cat.png` }]),
      400,
      'BadRequestError',
      'prompt[1].image_url',
    );
    expect(message).toMatch(/^prompt\[1\]\.image_url: the address 127\.0\.0\.2 is .*; only public addresses are allowed$/);
    expect(hits['/cat.png']).toBeUndefined();
  });

  it('refuses an HTML page served as image/png: the bytes decide the format', async () => {
    const message = await expectError(generate([{ type: 'image_url', image_url: url('/page.png') }]), 400, 'BadRequestError', 'prompt[1].image_url');
    expect(message).toMatch(/^prompt\[1\]\.image_url: the image is an HTML page, not one of the accepted image formats \(JPEG, PNG\)/);
    expect(hits['/page.png']).toBe(1);
  });

  it('refuses a data: URL whose payload is not base64', async () => {
    const message = await expectError(
      generate([{ type: 'image_url', image_url: 'data:image/png;base64,iVBOR*w0KGgo' }]),
      400,
      'BadRequestError',
      'prompt[1].image_url',
    );
    expect(message).toMatch(/^prompt\[1\]\.image_url: .*not valid base64/);
  });

  it('names the part at fault among several', async () => {
    const parts = [
      { type: 'image_url', image_url: url('/cat.png') },
      { type: 'text', text: 'and' },
      { type: 'video_url', video_url: 'ftp://127.0.0.1/clip.mp4' },
    ];
    const message = await expectError(generate(parts), 400, 'BadRequestError', 'prompt[3].video_url');
    expect(message).toMatch(/^prompt\[3\]\.video_url: .*ftp/);
  });

  it('refuses an unknown part type and an empty text part in validation', async () => {
    const unknown = await expectError(generate([{ type: 'hologram', hologram: 'x' }]), 400, 'BadRequestError', 'prompt[1].type');
    expect(unknown).toMatch(/^prompt\[1\]\.type /);
    const empty = await expectError(
      postJson(mediaApp(), '/generate', { prompt: [{ type: 'text', text: '' }, { type: 'image_url', image_url: url('/cat.png') }] }),
      400,
      'BadRequestError',
      'prompt[0].text',
    );
    expect(empty).toMatch(/^prompt\[0\]\.text must not be empty/);
    expect(hits['/cat.png']).toBeUndefined();
  });

  it('validates the rest of the request before fetching anything', async () => {
    const part = { type: 'image_url', image_url: url('/cat.png') };
    await expectError(generate([part], { temperature: -1 }), 400, 'BadRequestError', 'temperature');
    const bestOf = await expectError(generate([part], { n: 3, best_of: 2, temperature: 1 }), 400, 'BadRequestError', 'best_of');
    expect(bestOf).toMatch(/best_of must be greater than or equal to n/);
    expect(hits['/cat.png']).toBeUndefined();
  });

  it('still serves text-only prompt lists', async () => {
    const response = await postJson(mediaApp(), '/generate', { prompt: [{ type: 'text', text: golden.prompt }], temperature: 0, max_tokens: 3 });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ text: [`${golden.prompt}, there was`] });
  });

  it('stops the media fetch when the client goes away', async () => {
    const client = new AbortController();
    const pending = mediaApp().request('/generate', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: [{ type: 'image_url', image_url: url('/slow.png') }] }),
      signal: client.signal,
    });
    for (const deadline = Date.now() + 2000; hits['/slow.png'] === undefined; await new Promise((r) => setTimeout(r, 5))) {
      if (Date.now() > deadline) throw new Error('the media server never saw the request');
    }
    client.abort();
    const response = await pending;
    expect(response.status).toBe(499);
    await server.drained(2000); // the stalled download's connection is closed, not left behind
  });
});

describe('POST /v1/chat/completions with media parts', () => {
  it('fetches a whitelisted image_url, then refuses it with the text-only 400', async () => {
    const message = await expectError(
      chat([{ type: 'image_url', image_url: { url: url('/cat.png') } }]),
      400,
      'BadRequestError',
      'messages[0].content[1].image_url.url',
    );
    expect(message).toMatch(/^messages\[0\]\.content\[1\]\.image_url\.url: this model accepts text only; the image was fetched and its header checked/);
    expect(hits['/cat.png']).toBe(1);
  });

  it('reads the header of input_audio in FLAC, then refuses it', async () => {
    const flac = verbatimFlac([new Int16Array(4096).fill(500)], 16000);
    const message = await expectError(
      chat([{ type: 'input_audio', input_audio: { data: base64(flac), format: 'flac' } }]),
      400,
      'BadRequestError',
      'messages[0].content[1].input_audio.data',
    );
    expect(message).toMatch(/^messages\[0\]\.content\[1\]\.input_audio\.data: this model accepts text only; the audio was fetched and its header checked/);
  });

  it('refuses a host off the whitelist, a private address and an HTML "image"', async () => {
    const param = 'messages[0].content[1].image_url.url';
    const offList = await expectError(chat([{ type: 'image_url', image_url: { url: 'https://cdn.example.org/x.png' } }]), 400, 'BadRequestError', param);
    expect(offList).toMatch(/the host "cdn\.example\.org" is not in ALLOWED_MEDIA_DOMAINS_ENV/);
    const internal = await expectError(
      chat([{ type: 'image_url', image_url: { url: `http://127.0.0.2:${server.port}/cat.png` } }]),
      400,
      'BadRequestError',
      param,
    );
    expect(internal).toMatch(/only public addresses are allowed/);
    const html = await expectError(chat([{ type: 'image_url', image_url: { url: url('/page.png') } }]), 400, 'BadRequestError', param);
    expect(html).toMatch(/the image is an HTML page/);
  });

  it('refuses malformed base64 in a data: URL and in input_audio', async () => {
    const dataUrl = await expectError(
      chat([{ type: 'image_url', image_url: { url: 'data:image/png;base64,%%%%' } }]),
      400,
      'BadRequestError',
      'messages[0].content[1].image_url.url',
    );
    expect(dataUrl).toMatch(/not valid base64/);
    const inline = await expectError(
      chat([{ type: 'input_audio', input_audio: { data: 'UklGR!!!', format: 'wav' } }]),
      400,
      'BadRequestError',
      'messages[0].content[1].input_audio.data',
    );
    expect(inline).toMatch(/not valid base64/);
  });

  it('refuses an unknown part type and an empty text part', async () => {
    const unknown = await expectError(chat([{ type: 'hologram', hologram: 'x' }]), 400, 'BadRequestError', 'messages[0].content[1].type');
    expect(unknown).toMatch(/^messages\[0\]\.content\[1\]\.type /);
    const empty = await expectError(chat([{ type: 'text', text: '' }]), 400, 'BadRequestError', 'messages[0].content[1].text');
    expect(empty).toMatch(/^messages\[0\]\.content\[1\]\.text must be a non-empty string/);
  });

  it('still serves text content parts', async () => {
    const response = await postJson(mediaApp(), '/v1/chat/completions', {
      model: MODEL,
      messages: [{ role: 'user', content: [{ type: 'text', text: golden.prompt }] }],
      temperature: 0,
      max_tokens: 3,
    });
    expect(response.status).toBe(200);
    expect((await response.json()).choices[0].message.content).toBe(', there was');
  });
});
