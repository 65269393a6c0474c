/**
 * Model folders as transformers 5's save_pretrained writes them (test/fixtures/transformers5/,
 * made by scripts/transformers5/build_folders.py), served over HTTP:
 * - text/: chat_template.jinja plus additional_chat_templates/tool_use.jinja, no template in
 *   tokenizer_config.json, transformers 5's config.json (rope_parameters): /tokenize gives
 *   apply_chat_template's ids (the tool_use template when tools are passed) and chat gives
 *   transformers' greedy continuation of them; the same with the template in a legacy
 *   chat_template.json;
 * - smolvlm/: the image processor nested in processor_config.json (no
 *   preprocessor_config.json): the expanded prompt has the processor's ids and the output is
 *   the fixture's torch reference; JPEGs Pillow wrote (4:2:0, 4:2:2, progressive,
 *   EXIF-rotated, CMYK) give transformers' pixel values (load_image + the processor) and its
 *   prompt length.
 */
import { readFileSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { nodeGuideCompiler } from '../../src/runtime/node/guides.js';
import { MODEL_DIR, postJson } from '../http/helpers.js';
import { preprocessorSettings, processorSettings, withChatTemplateFiles } from '../../src/engine/loading/folder-layout.js';
import { decodeJpegUpright } from '../../src/media/decode/image.js';
import { createNodeJpegDecoder } from '../../src/media/node-jpeg.js';
import { Idefics3Processor } from '../../src/multimodal/processors/idefics3.js';
import { DEFAULT_MULTIMODAL_LIMITS } from '../../src/multimodal/types.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { imageDataUrl, reference as fixtureReference, SMOLVLM_DIR } from '../multimodal/fixtures.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'transformers5');
const JPEG_DIR = join(import.meta.dirname, '..', 'fixtures', 'media', 'jpeg');

interface TextCase {
  messages: Array<{ role: string; content: string }>;
  tools: unknown[] | null;
  prompt_ids: number[];
  completion_ids: number[];
  text: string;
}

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'transformers5-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function serve(dir: string, name: string): Promise<{ engine: LocalEngine; app: Hono }> {
  const engine = await createNodeEngine({ modelDir: dir, servedModelName: name });
  const app = createApp({ engine, config: parseServerConfig({ modelDir: dir, servedModelName: name }), guideCompiler: nodeGuideCompiler(engine) });
  return { engine, app };
}

async function json<T>(response: Response | Promise<Response>): Promise<T> {
  const res = await response;
  if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}

describe('a transformers 5 text folder (chat_template.jinja, additional_chat_templates/)', () => {
  const reference = JSON.parse(readFileSync(join(FIXTURES, 'text', 'reference.json'), 'utf8')) as { max_tokens: number; cases: TextCase[] };

  async function textFolder(variant: 'jinja' | 'json'): Promise<string> {
    const dir = join(root, `text-${variant}`);
    await cp(join(FIXTURES, 'text'), dir, { recursive: true });
    await cp(join(MODEL_DIR, 'onnx'), join(dir, 'onnx'), { recursive: true });
    if (variant === 'json') {
      // The legacy file processors wrote before transformers 5 (which still reads it).
      const template = await readFile(join(dir, 'chat_template.jinja'), 'utf8');
      await writeFile(join(dir, 'chat_template.json'), JSON.stringify({ chat_template: template }));
      await rm(join(dir, 'chat_template.jinja'));
      await rm(join(dir, 'additional_chat_templates'), { recursive: true });
    }
    return dir;
  }

  for (const variant of ['jinja', 'json'] as const) {
    it(`${variant === 'jinja' ? 'chat_template.jinja + tool_use.jinja' : 'chat_template.json'}: /tokenize and chat give transformers' ids and greedy text`, async () => {
      const { engine, app } = await serve(await textFolder(variant), 'stories-t5');
      try {
        const cases = reference.cases.filter((c) => variant === 'jinja' || c.tools === null);
        for (const c of cases) {
          const label = `${c.messages.length} messages, ${c.tools ? 'tools' : 'no tools'}`;
          const tools = c.tools ? { tools: c.tools } : {};
          const tokenized = await json<{ tokens: number[] }>(postJson(app, '/tokenize', { model: 'stories-t5', messages: c.messages, ...tools }));
          expect(tokenized.tokens, label).toEqual(c.prompt_ids);
          const body = await json<{ choices: Array<{ message: { content: string } }>; usage: { prompt_tokens: number } }>(
            postJson(app, '/v1/chat/completions', { model: 'stories-t5', messages: c.messages, ...tools, ...(c.tools ? { tool_choice: 'none' } : {}), max_tokens: reference.max_tokens, temperature: 0, ignore_eos: true }),
          );
          expect(body.choices[0].message.content, label).toBe(c.text);
          expect(body.usage.prompt_tokens, label).toBe(c.prompt_ids.length);
        }
      } finally {
        await engine.dispose();
      }
    });
  }
});

describe('a transformers 5 SmolVLM folder (image processor nested in processor_config.json)', () => {
  it('serves images with the processor\'s prompt ids and the reference output', async () => {
    const dir = join(root, 'smolvlm');
    await cp(join(FIXTURES, 'smolvlm'), dir, { recursive: true });
    await cp(join(SMOLVLM_DIR, 'onnx'), join(dir, 'onnx'), { recursive: true });
    for (const file of ['config.json', 'generation_config.json']) await cp(join(SMOLVLM_DIR, file), join(dir, file));
    const processed = JSON.parse(await readFile(join(FIXTURES, 'smolvlm', 'reference.json'), 'utf8')) as {
      generations: Array<{ question: string; images: string[]; prompt_token_ids: number[] }>;
      jpegs: Record<string, { prompt_token_ids: number[] }>;
    };
    const torchReference = fixtureReference('smolvlm');
    const { engine, app } = await serve(dir, 'smolvlm-t5');
    try {
      expect(engine.info.acceptedMedia).toEqual(['image']);
      for (const generation of processed.generations) {
        const expected = torchReference.generations.find((g) => g.question === generation.question && g.images.join() === generation.images.join())!;
        const content = [...generation.images.map((name) => ({ type: 'image_url', image_url: { url: imageDataUrl(name) } })), { type: 'text', text: generation.question }];
        const body = await json<{ choices: Array<{ message: { content: string } }>; usage: { prompt_tokens: number } }>(
          postJson(app, '/v1/chat/completions', { model: 'smolvlm-t5', messages: [{ role: 'user', content }], max_tokens: expected.max_tokens, temperature: 0 }),
        );
        expect(body.usage.prompt_tokens).toBe(generation.prompt_token_ids.length);
        expect(body.choices[0].message.content).toBe(expected.text);
      }
      // JPEGs written by Pillow (4:2:0, 4:2:2, progressive, EXIF-rotated, CMYK): the prompt
      // transformers' processor builds from load_image's picture, over HTTP.
      for (const [name, { prompt_token_ids }] of Object.entries(processed.jpegs)) {
        const url = `data:image/jpeg;base64,${readFileSync(join(JPEG_DIR, name)).toString('base64')}`;
        const content = [{ type: 'image_url', image_url: { url } }, { type: 'text', text: 'What is in this image?' }];
        const body = await json<{ usage: { prompt_tokens: number } }>(
          postJson(app, '/v1/chat/completions', { model: 'smolvlm-t5', messages: [{ role: 'user', content }], max_tokens: 1 }),
        );
        expect(body.usage.prompt_tokens, name).toBe(prompt_token_ids.length);
      }
    } finally {
      await engine.dispose();
    }
  });

  it('JPEG pixel values equal transformers\' (load_image + the nested image processor) within float rounding', async () => {
    const processed = JSON.parse(await readFile(join(FIXTURES, 'smolvlm', 'reference.json'), 'utf8')) as {
      jpegs: Record<string, { shape: number[] }>;
    };
    const dir = join(FIXTURES, 'smolvlm');
    const processorConfig = JSON.parse(await readFile(join(dir, 'processor_config.json'), 'utf8')) as Record<string, unknown>;
    const tokenizer = HfTokenizer.fromJson(JSON.parse(await readFile(join(dir, 'tokenizer.json'), 'utf8')), JSON.parse(await readFile(join(dir, 'tokenizer_config.json'), 'utf8')));
    const processor = Idefics3Processor.create(
      { config: JSON.parse(await readFile(join(SMOLVLM_DIR, 'config.json'), 'utf8')), preprocessorConfig: preprocessorSettings(undefined, processorConfig)!, processorConfig },
      (token) => tokenizer.tokenToId(token),
    );
    const decoder = createNodeJpegDecoder();
    for (const [name, { shape }] of Object.entries(processed.jpegs)) {
      const image = await decodeJpegUpright(new Uint8Array(readFileSync(join(JPEG_DIR, name))), { maxPixels: 1_000_000 }, decoder);
      const result = processor.process(image, 'p', DEFAULT_MULTIMODAL_LIMITS);
      expect([result.frames, 3, result.height, result.width], name).toEqual(shape);
      const bytes = readFileSync(join(dir, `pixels-${name}.f32`));
      const want = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
      let worst = 0;
      for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(result.pixels[i] - want[i]));
      expect(worst, name).toBeLessThan(1e-6);
    }
  });
});

describe('folding the transformers 5 layout', () => {
  it('takes the image token from extra_special_tokens, the image processor from processor_config.json, named templates from files', () => {
    const tokenizerConfig = { extra_special_tokens: { image_token: '<img>', boi_token: '<boi>' } };
    expect(processorSettings({ patch_size: 14 }, tokenizerConfig)).toEqual({ patch_size: 14, image_token: '<img>' });
    expect(processorSettings({ image_token: '<image>' }, tokenizerConfig)).toEqual({ image_token: '<image>' });
    expect(processorSettings({ patch_size: 14 }, { extra_special_tokens: ['<img>'] })).toEqual({ patch_size: 14 });
    const nested = { image_processor: { size: { longest_edge: 96 } }, video_processor: { fps: 1, num_frames: 64 }, image_seq_len: 4 };
    expect(preprocessorSettings(undefined, nested)).toEqual({ size: { longest_edge: 96 }, video_sampling: { fps: 1, max_frames: 64 } });
    expect(preprocessorSettings({ size: 1 }, nested)).toEqual({ size: 1 });
    expect(withChatTemplateFiles({ chat_template: 'old' }, { jinja: 'new', additional: { tool_use: 'tools' } }).chat_template).toEqual([
      { name: 'default', template: 'new' },
      { name: 'tool_use', template: 'tools' },
    ]);
    expect(withChatTemplateFiles({}, { json: { chat_template: 'legacy' } }).chat_template).toBe('legacy');
    expect(withChatTemplateFiles({ chat_template: 'kept' }, {}).chat_template).toBe('kept');
  });
});
