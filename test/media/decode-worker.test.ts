/**
 * Decoding on a worker thread (src/media/node-decode-worker.ts): the same pixels and
 * samples as decoding here, the event loop free while a large PNG inflates, and a
 * deadline or an abort that stops the decoder mid-file without breaking the next part.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_MEDIA_CONFIG } from '../../src/media/config.js';
import { decodeMedia } from '../../src/media/decode/index.js';
import { decoderForClient } from '../../src/media/decode/media-decoder.js';
import { createWorkerMediaDecoder } from '../../src/media/node-decode-worker.js';
import type { DecodedAudio, DecodedImage, FetchedMedia } from '../../src/media/types.js';
import { pcm16Wav, smallPng, zeroPng } from './helpers/fixtures.js';
import { maxLoopLag } from './helpers/loop-lag.js';

const decoder = createWorkerMediaDecoder({ timeoutMs: 20_000 });
afterAll(() => decoder.close());

const png = (bytes: Uint8Array): FetchedMedia => ({ kind: 'image', format: 'png', bytes, source: 'data' });
const big = zeroPng(6000, 6000);

describe('worker media decoder', () => {
  it('gives the pixels and samples the decoders give on this thread', async () => {
    const image = (await decoder.decode(png(smallPng()), DEFAULT_MEDIA_CONFIG)) as DecodedImage;
    expect(image).toEqual(await decodeMedia(png(smallPng()), DEFAULT_MEDIA_CONFIG));
    const wav: FetchedMedia = { kind: 'audio', format: 'wav', bytes: pcm16Wav([Int16Array.from([0, 8192, -8192, 16384])], 8000), source: 'data' };
    const audio = (await decoder.decode(wav, DEFAULT_MEDIA_CONFIG)) as DecodedAudio;
    expect(audio).toEqual(await decodeMedia(wav, DEFAULT_MEDIA_CONFIG));
    expect(audio.sourceSampleRate).toBe(8000);
  });

  it('keeps the event loop free while a 36 MP PNG decodes', async () => {
    let image: DecodedImage | undefined;
    const lag = await maxLoopLag(async () => {
      image = (await decoder.decode(png(big), DEFAULT_MEDIA_CONFIG)) as DecodedImage;
    });
    expect(image!.width * image!.height).toBe(36_000_000);
    expect(image!.rgb.length).toBe(108_000_000);
    expect(lag, 'event-loop lag (ms)').toBeLessThan(250);
  });

  it('stops a decode past its deadline with a timeout refusal; the next part decodes', async () => {
    const hurried = createWorkerMediaDecoder({ timeoutMs: 20 });
    try {
      await expect(hurried.decode(png(big), DEFAULT_MEDIA_CONFIG)).rejects.toMatchObject({
        reason: 'timeout',
        message: expect.stringMatching(/took longer than 20 ms \(MEDIA_DECODE_TIMEOUT_MS\)/),
      });
    } finally {
      await hurried.close();
    }
    await expect(decoder.decode(png(smallPng()), DEFAULT_MEDIA_CONFIG)).resolves.toMatchObject({ width: 3, height: 2 });
  });

  it("takes waiting parts from clients in turn: one client's large images delay another's small one by one part, not all", async () => {
    const order: string[] = [];
    const decode = (client: string, tag: string, bytes: Uint8Array) =>
      decoderForClient(decoder, client)
        .decode(png(bytes), DEFAULT_MEDIA_CONFIG)
        .then((image) => (order.push(tag), image as DecodedImage));
    const large = zeroPng(3000, 3000);
    const flood = [1, 2, 3, 4].map((i) => decode('10.0.0.66', `a${i}`, large));
    const small = await decode('10.0.0.7', 'b1', smallPng());
    await Promise.all(flood);
    // In arrival order b1 would come last; in turn it follows the one part running when it came.
    expect(order).toEqual(['a1', 'b1', 'a2', 'a3', 'a4']);
    expect(small).toEqual(await decodeMedia(png(smallPng()), DEFAULT_MEDIA_CONFIG));
  });

  it('stops a decode whose request went away', async () => {
    const controller = new AbortController();
    const pending = decoder.decode(png(big), { ...DEFAULT_MEDIA_CONFIG, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('client gone')), 20);
    await expect(pending).rejects.toThrow('client gone');
    await expect(decoder.decode(png(smallPng()), DEFAULT_MEDIA_CONFIG)).resolves.toMatchObject({ width: 3 });
  });

  it('a decoder refusal crosses back as the same MediaError', async () => {
    const broken = smallPng().slice(0, 40);
    await expect(decoder.decode(png(broken), DEFAULT_MEDIA_CONFIG)).rejects.toMatchObject({ name: 'MediaError', reason: 'decode_failed' });
  });
});
