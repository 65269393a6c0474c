/**
 * The second family (LLaVA: one fixed-size image, <image> × N) over HTTP against its torch
 * reference, and the startup refusals of vision-language folders the engine cannot serve.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hono } from 'hono';
import { encodeOnnxModel, OnnxDataType } from '../../src/graph/onnx-writer.js';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createApp } from '../../src/http/app.js';
import { resolveMediaConfig } from '../../src/media/index.js';
import { createNodeMediaFetcher } from '../../src/media/node.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { postJson } from '../http/helpers.js';
import { imageDataUrl, LLAVA_DIR, reference, SMOLVLM_DIR, temporaryFolderCopies } from './fixtures.js';

describe('LLaVA folder', () => {
  const expected = reference('llava');
  let engine: LocalEngine;
  let app: Hono;
  beforeAll(async () => {
    engine = await createNodeEngine({ modelDir: LLAVA_DIR, servedModelName: 'llava' });
    // The image decoded and processed on Node's media thread, as a served request's is.
    app = createApp({ engine, config: parseServerConfig({ modelDir: LLAVA_DIR, servedModelName: 'llava' }), mediaFetcher: createNodeMediaFetcher(resolveMediaConfig()) });
  });
  afterAll(async () => {
    await engine?.dispose();
  });

  it('chat with an image equals the reference; the image is <image> x (24 / 8)^2', async () => {
    expect(engine.loadReport.multimodal).toBe('llava image processor, onnx/vision_encoder.onnx');
    const outputs: string[] = [];
    for (const generation of expected.generations) {
      const content = [...generation.images.map((name) => ({ type: 'image_url', image_url: { url: imageDataUrl(name) } })), { type: 'text', text: generation.question }];
      const res = await postJson(app, '/v1/chat/completions', {
        model: 'llava',
        messages: [{ role: 'user', content }],
        max_tokens: generation.max_tokens,
        temperature: 0,
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { choices: Array<{ message: { content: string } }>; usage: { prompt_tokens: number } };
      expect(body.choices[0].message.content).toBe(generation.text);
      expect(body.usage.prompt_tokens).toBe(generation.prompt_token_ids.length);
      const imageId = engine.tokenizer.tokenToId('<image>')!;
      expect(generation.prompt_token_ids.filter((id) => id === imageId)).toHaveLength(expected.image_tokens!);
      outputs.push(body.choices[0].message.content);
    }
    expect(new Set(outputs).size).toBe(outputs.length);
  });
});

describe('vision-language folders the engine cannot serve are refused at startup', () => {
  const copyOf = temporaryFolderCopies('vlm-');
  const copyOfSmolvlm = () => copyOf(SMOLVLM_DIR);

  it('a decoder taking inputs_embeds without embed_tokens.onnx', async () => {
    const dir = await copyOfSmolvlm();
    await rm(join(dir, 'onnx', 'embed_tokens.onnx'));
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(/takes "inputs_embeds".*no onnx\/embed_tokens\.onnx/);
  });

  it('a tile size the vision encoder does not take, at startup rather than at the first image', async () => {
    const dir = await copyOfSmolvlm();
    const preprocessor = JSON.parse(await readFile(join(dir, 'preprocessor_config.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(dir, 'preprocessor_config.json'), JSON.stringify({ ...preprocessor, max_image_size: { longest_edge: 48 } }));
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(/vision_encoder\.onnx does not take the frames its image processor makes \(\d+ × 3 × 48 × 48/);
  });

  it('a vision encoder that needs an input the engine does not feed, by name', async () => {
    const dir = await copyOfSmolvlm();
    const graph = encodeOnnxModel({
      irVersion: 8,
      opsetVersion: 17,
      producerName: 'test',
      producerVersion: '0',
      graph: {
        name: 'vision',
        nodes: [{ opType: 'Identity', name: 'id', inputs: ['pixel_values'], outputs: ['image_features'] }],
        initializers: [],
        inputs: [
          { name: 'pixel_values', elemType: OnnxDataType.FLOAT, shape: ['b', 'n', 3, 32, 32] },
          { name: 'image_grid_thw', elemType: OnnxDataType.INT64, shape: ['n', 3] },
        ],
        outputs: [{ name: 'image_features', elemType: OnnxDataType.FLOAT, shape: ['b', 'n', 3, 32, 32] }],
      },
    });
    await writeFile(join(dir, 'onnx', 'vision_encoder.onnx'), graph);
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(/vision_encoder\.onnx cannot be served: it requires "image_grid_thw"/);
  });

  it('a model_type without an image processor here', async () => {
    const dir = await copyOfSmolvlm();
    const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(dir, 'config.json'), JSON.stringify({ ...config, model_type: 'qwen2_vl' }));
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(/model_type "qwen2_vl" has no image processor here \(supported: idefics3, smolvlm, llava\)/);
  });

  it('a decoder taking inputs_embeds with embed_tokens but no vision encoder serves text', async () => {
    const dir = await copyOfSmolvlm();
    await rm(join(dir, 'onnx', 'vision_encoder.onnx'));
    const engine = await createNodeEngine({ modelDir: dir, servedModelName: 'text' });
    try {
      expect(engine.info.acceptedMedia).toBeUndefined();
      const text = reference('smolvlm').generations.find((generation) => generation.images.length === 0)!;
      const app = createApp({ engine, config: parseServerConfig({ modelDir: dir, servedModelName: 'text' }) });
      // The reference's prompt ids as they are: embed_tokens feeds the decoder, no image involved.
      const completion = await postJson(app, '/v1/completions', { model: 'text', prompt: text.prompt_token_ids, max_tokens: text.max_tokens, temperature: 0 });
      expect(((await completion.json()) as { choices: Array<{ text: string }> }).choices[0].text).toBe(text.text);
    } finally {
      await engine.dispose();
    }
  });
});
