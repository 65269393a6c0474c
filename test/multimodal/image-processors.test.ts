import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Idefics3Processor, idefics3PromptText } from '../../src/multimodal/processors/idefics3.js';
import { LlavaProcessor } from '../../src/multimodal/processors/llava.js';
import { DEFAULT_MULTIMODAL_LIMITS } from '../../src/multimodal/types.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { decodeFixtureImage, IMAGE_NAMES, LLAVA_DIR, readJson, reference, referencePixels, SMOLVLM_DIR } from './fixtures.js';

function folderFiles(dir: string) {
  const tokenizerJson = readJson(join(dir, 'tokenizer.json'));
  const tokenizerConfig = readJson(join(dir, 'tokenizer_config.json'));
  return {
    config: readJson(join(dir, 'config.json')),
    preprocessorConfig: readJson(join(dir, 'preprocessor_config.json')),
    processorConfig: readJson(join(dir, 'processor_config.json')),
    tokenizer: HfTokenizer.fromJson(tokenizerJson, tokenizerConfig),
  };
}

/** Largest absolute difference; PNG must match exactly, JPEG within what decoders differ by. */
function maxDifference(a: Float32Array, b: Float32Array): number {
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - b[i]));
  return max;
}

describe('Idefics3 / SmolVLM image processor', () => {
  const files = folderFiles(SMOLVLM_DIR);
  const processor = Idefics3Processor.create(files, (token) => files.tokenizer.tokenToId(token));
  const limits = DEFAULT_MULTIMODAL_LIMITS;
  const expected = reference('smolvlm');

  it.each(IMAGE_NAMES)('pixel values of %s equal the reference (Pillow resize, tiles + global image, normalised)', (name) => {
    const processed = processor.process(decodeFixtureImage(name), 'prompt[1].image_url', limits);
    const want = expected.images[name];
    expect([processed.frames, 3, processed.height, processed.width]).toEqual(want.shape);
    const pixels = referencePixels('smolvlm', name);
    expect(processed.pixels.length).toBe(pixels.length);
    // PNG: Pillow and fast-png decode the same bytes, so every value is equal. JPEG: libjpeg's
    // and jpeg-js's inverse DCTs differ by a level or two in some pixels (2/255 after the
    // 0.5 std is 0.0157), and resampling spreads that a little.
    expect(maxDifference(processed.pixels, pixels)).toBeLessThanOrEqual(name.endsWith('.png') ? 0 : 0.05);
    expect(processed.imageTokens).toBe(((want.rows ?? 0) * (want.cols ?? 0) + 1) * expected.image_seq_len!);
  });

  it('expands an image as <fake_token_around_image><row_r_col_c><image>... rows, then the global image', () => {
    const processed = processor.process(decodeFixtureImage('tall.png'), 'p', limits);
    const n = expected.image_seq_len!;
    const img = '<image>'.repeat(n);
    const fake = '<fake_token_around_image>';
    const rows = [1, 2, 3].map((r) => [1, 2].map((c) => `${fake}<row_${r}_col_${c}>${img}`).join('') + '\n').join('');
    expect(processed.promptText).toBe(`${rows}\n${fake}<global-img>${img}${fake}`);
    expect(idefics3PromptText(0, 0, 2)).toBe(`${fake}<global-img><image><image>${fake}`);
  });

  it('refuses an image with more tiles than MEDIA_MAX_IMAGE_TILES, naming the part', () => {
    expect(() => processor.process(decodeFixtureImage('wide.jpg'), 'messages[0].content[1].image_url', { ...limits, maxImageTiles: 4 })).toThrow(
      /messages\[0\]\.content\[1\]\.image_url: the image becomes 3 x 3 tiles/,
    );
  });

  it('refuses at startup a tokenizer without the family tokens, by name', () => {
    expect(() => Idefics3Processor.create(files, (token) => (token === '<global-img>' ? undefined : files.tokenizer.tokenToId(token)))).toThrow(
      /"<global-img>"/,
    );
  });
});

describe('LLaVA image processor', () => {
  const files = folderFiles(LLAVA_DIR);
  const processor = LlavaProcessor.create(files, (token) => files.tokenizer.tokenToId(token));
  const expected = reference('llava');

  it.each(IMAGE_NAMES)('pixel values of %s equal the reference (shortest edge, bicubic, center crop)', (name) => {
    const processed = processor.process(decodeFixtureImage(name), 'p', DEFAULT_MULTIMODAL_LIMITS);
    expect([processed.frames, 3, processed.height, processed.width]).toEqual(expected.images[name].shape);
    expect(maxDifference(processed.pixels, referencePixels('llava', name))).toBeLessThanOrEqual(name.endsWith('.png') ? 0 : 0.1);
    expect(processed.promptText).toBe('<image>'.repeat(expected.image_tokens!));
  });
});
