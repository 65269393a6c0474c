/**
 * A tiny Idefics3 (SmolVLM-256M's architecture) made with transformers 5 and exported to
 * ONNX in the onnx-community layout (vision_encoder, embed_tokens, decoder_model_merged) by
 * scripts/transformers5/build_idefics3_export.py, served over HTTP: for Pillow-written JPEGs
 * (4:2:0, 4:2:2, progressive, EXIF-rotated, CMYK) the greedy output equals transformers'
 * generate on load_image's pixels, and the prompt length equals its processor's input_ids.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hono } from 'hono';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createApp } from '../../src/http/app.js';
import { createMediaFetcher, resolveMediaConfig } from '../../src/media/index.js';
import { createNodeMediaFetcher } from '../../src/media/node.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { postJson } from '../http/helpers.js';

const DIR = join(import.meta.dirname, '..', 'fixtures', 'transformers5', 'idefics3-onnx');
const JPEG_DIR = join(import.meta.dirname, '..', 'fixtures', 'media', 'jpeg');
interface Generation {
  image: string;
  question: string;
  prompt_token_ids: number[];
  token_ids: number[];
  text: string;
}
const jpegUrl = (name: string) => `data:image/jpeg;base64,${readFileSync(join(JPEG_DIR, name)).toString('base64')}`;
const expected = JSON.parse(readFileSync(join(DIR, 'reference.json'), 'utf8')) as { max_new_tokens: number; generations: Generation[] };

let engine: LocalEngine;
let app: Hono;
/** The same server with the pure-JS fetcher (jpeg-js: workerd and the page decode JPEG this way today). */
let pureJsApp: Hono;
beforeAll(async () => {
  engine = await createNodeEngine({ modelDir: DIR, servedModelName: 'idefics3-t5' });
  const config = parseServerConfig({ modelDir: DIR, servedModelName: 'idefics3-t5' });
  // npm start's fetcher: JPEG through sharp (libjpeg-turbo, as Pillow).
  app = createApp({ engine, config, mediaFetcher: createNodeMediaFetcher(resolveMediaConfig({})) });
  pureJsApp = createApp({ engine, config, mediaFetcher: createMediaFetcher(resolveMediaConfig({})) });
});
afterAll(async () => {
  await engine?.dispose();
});

describe('transformers 5 Idefics3 export in the onnx-community layout', () => {
  it('loads its three graphs', () => {
    expect(engine.info.acceptedMedia).toEqual(['image']);
    expect(engine.loadReport.multimodal).toBe('idefics3 image processor, onnx/vision_encoder.onnx');
    expect(engine.loadReport.file).toBe('onnx/decoder_model_merged.onnx');
  });

  const chat = (target: Hono, generation: Generation) =>
    postJson(target, '/v1/chat/completions', {
      model: 'idefics3-t5',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: jpegUrl(generation.image) } }, { type: 'text', text: generation.question }] }],
      max_tokens: expected.max_new_tokens,
      temperature: 0,
    });

  it.each(expected.generations.map((g) => [g.image, g] as const))('%s over /v1/chat/completions: transformers\' greedy output', async (_name, generation) => {
    const res = await chat(app, generation);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: Array<{ message: { content: string } }>; usage: { prompt_tokens: number; completion_tokens: number } };
    expect(body.usage.prompt_tokens).toBe(generation.prompt_token_ids.length);
    expect(body.usage.completion_tokens).toBe(generation.token_ids.length);
    expect(body.choices[0].message.content).toBe(generation.text);
  });

  it('the outputs depend on the image (the fixture can tell decoders apart)', async () => {
    expect(new Set(expected.generations.map((g) => g.token_ids.join(','))).size).toBe(expected.generations.length);
    // jpeg-js upsamples 4:2:0 chroma unlike libjpeg: its pixels give another output on this model.
    const res = await chat(pureJsApp, expected.generations.find((g) => g.image === '420.jpg')!);
    expect(((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content).not.toBe(
      expected.generations.find((g) => g.image === '420.jpg')!.text,
    );
  });
});
