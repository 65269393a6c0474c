/**
 * A vision model's image processing on the media decoding thread (src/multimodal/
 * image-processing.ts through MediaDecoder.runTask): the same pixel values and prompt text
 * as processing here (which test/multimodal/image-processors.test.ts checks against
 * transformers), the processor's refusals crossing back as MultimodalRequestError with
 * their parameter, the decode deadline applying, and the event loop free meanwhile.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DecodedImage, DecodedVideo } from '../../src/media/index.js';
import { createWorkerMediaDecoder } from '../../src/media/node-decode-worker.js';
import { processImages } from '../../src/multimodal/image-processing.js';
import { Idefics3Processor } from '../../src/multimodal/processors/idefics3.js';
import { LlavaProcessor } from '../../src/multimodal/processors/llava.js';
import { DEFAULT_MULTIMODAL_LIMITS, MultimodalRequestError, type PromptImage } from '../../src/multimodal/types.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { decodeFixtureImage, IMAGE_NAMES, LLAVA_DIR, readJson, SMOLVLM_DIR } from './fixtures.js';
import { maxLoopLag } from '../media/helpers/loop-lag.js';

const decoder = createWorkerMediaDecoder({ timeoutMs: 20_000 });
afterAll(() => decoder.close());

function folderFiles(dir: string) {
  const tokenizer = HfTokenizer.fromJson(readJson(join(dir, 'tokenizer.json')), readJson(join(dir, 'tokenizer_config.json')));
  const files = {
    config: readJson(join(dir, 'config.json')),
    preprocessorConfig: readJson(join(dir, 'preprocessor_config.json')),
    processorConfig: readJson(join(dir, 'processor_config.json')),
  };
  return { files, tokenToId: (token: string) => tokenizer.tokenToId(token) };
}

const smol = folderFiles(SMOLVLM_DIR);
const smolvlm = Idefics3Processor.create(smol.files, smol.tokenToId, true);
const llavaFiles = folderFiles(LLAVA_DIR);
const llava = LlavaProcessor.create(llavaFiles.files, llavaFiles.tokenToId);
const limits = DEFAULT_MULTIMODAL_LIMITS;

/** A fresh copy each time: moving pixels to the thread spends the caller's buffers. */
function fixtureImages(): PromptImage[] {
  return IMAGE_NAMES.map((name, index) => ({ param: `messages[0].content[${index}]`, image: decodeFixtureImage(name) }));
}

function noise(width: number, height: number, seed = 7): DecodedImage {
  const rgb = new Uint8Array(width * height * 3);
  let state = seed;
  for (let i = 0; i < rgb.length; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    rgb[i] = state >>> 24;
  }
  return { kind: 'image', width, height, rgb };
}

function video(): DecodedVideo {
  const frames = [noise(40, 24, 1), noise(40, 24, 2), noise(40, 24, 3)];
  return { kind: 'video', frames, timestamps: [0, 0.5, 1], duration: 1.5, totalFrames: 15 };
}

describe('image processing on the media thread', () => {
  it('gives the pixel values and prompt text processing on this thread gives (Idefics3 images and a video, LLaVA)', async () => {
    const withVideo = (images: PromptImage[]): PromptImage[] => [...images, { param: 'messages[0].content[9]', video: video() }];
    const here = await processImages(smolvlm, withVideo(fixtureImages()), limits);
    const there = await processImages(smolvlm, withVideo(fixtureImages()), limits, decoder);
    expect(there.length).toBe(5);
    expect(there).toEqual(here);
    expect(there[4].frames).toBe(3);
    const llavaHere = await processImages(llava, fixtureImages(), limits);
    const llavaThere = await processImages(llava, fixtureImages(), limits, decoder);
    expect(llavaThere).toEqual(llavaHere);
    expect(llavaThere[0].pixels).toBeInstanceOf(Float32Array);
  });

  it("a processor's refusal comes back as MultimodalRequestError naming the part", async () => {
    const tight = { ...limits, maxImageTiles: 4 };
    const failure = processImages(smolvlm, [{ param: 'prompt[2].image_url', image: noise(300, 300) }], tight, decoder);
    await expect(failure).rejects.toBeInstanceOf(MultimodalRequestError);
    await expect(processImages(smolvlm, [{ param: 'prompt[2].image_url', image: noise(300, 300) }], tight, decoder)).rejects.toMatchObject({
      param: 'prompt[2].image_url',
      message: expect.stringMatching(/MEDIA_MAX_IMAGE_TILES/),
    });
  });

  it('keeps the event loop free while a 24 MP image is resized, tiled and normalised', async () => {
    const image = noise(6000, 4000);
    const lag = await maxLoopLag(async () => {
      const [processed] = await processImages(smolvlm, [{ param: 'p', image }], limits, decoder);
      expect(processed.frames).toBe(7); // 96 × 64 after resizing: 2 × 3 tiles of 32 and the global image
    });
    expect(lag, 'event-loop lag (ms)').toBeLessThan(250);
  });

  it('runs under the decode deadline (MEDIA_DECODE_TIMEOUT_MS); the next job still runs', async () => {
    const hurried = createWorkerMediaDecoder({ timeoutMs: 20 });
    try {
      await expect(processImages(smolvlm, [{ param: 'p', image: noise(6000, 4000) }], limits, hurried)).rejects.toMatchObject({
        reason: 'timeout',
        message: expect.stringMatching(/processing the image took longer than 20 ms \(MEDIA_DECODE_TIMEOUT_MS\)/),
      });
    } finally {
      await hurried.close();
    }
    const [processed] = await processImages(smolvlm, [{ param: 'p', image: decodeFixtureImage('small.png') }], limits, decoder);
    expect(processed.imageTokens).toBeGreaterThan(0);
  });
});
