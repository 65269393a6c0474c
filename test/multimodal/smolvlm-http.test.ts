/**
 * A SmolVLM-style folder (test/fixtures/multimodal/smolvlm) served end to end: images in
 * /generate prompts and chat image_url parts go through the Idefics3 processor, the vision
 * encoder and the engine's spliced prefill, and the output equals the torch reference
 * computed by scripts/multimodal/build_fixtures.py. The images are decoded and processed on
 * Node's media thread (createNodeMediaFetcher), as a served request's are.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hono } from 'hono';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createApp } from '../../src/http/app.js';
import { createMediaFetcher, resolveMediaConfig } from '../../src/media/index.js';
import { createNodeMediaFetcher } from '../../src/media/node.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { nodeGuideCompiler } from '../../src/runtime/node/guides.js';
import { expectError, postJson, ssePayloads } from '../http/helpers.js';
import { imageDataUrl, reference, SMOLVLM_DIR, type ReferenceGeneration } from './fixtures.js';

const MODEL = 'smolvlm';
const expected = reference('smolvlm');
let engine: LocalEngine;
let app: Hono;

beforeAll(async () => {
  engine = await createNodeEngine({ modelDir: SMOLVLM_DIR, servedModelName: MODEL });
  // Node's media pipeline, as `npm start` has it: decoding and the image processor on its thread.
  app = createApp({
    engine,
    config: parseServerConfig({ modelDir: SMOLVLM_DIR, servedModelName: MODEL }),
    guideCompiler: nodeGuideCompiler(engine),
    mediaFetcher: createNodeMediaFetcher(resolveMediaConfig()),
  });
});
afterAll(async () => {
  await engine?.dispose();
});

function chatBody(generation: ReferenceGeneration, extra: Record<string, unknown> = {}) {
  const content = [
    ...generation.images.map((name) => ({ type: 'image_url', image_url: { url: imageDataUrl(name) } })),
    { type: 'text', text: generation.question },
  ];
  return { model: MODEL, messages: [{ role: 'user', content }], max_tokens: generation.max_tokens, temperature: 0, ...extra };
}

async function chat(body: unknown) {
  const res = await postJson(app, '/v1/chat/completions', body);
  if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
  return (await res.json()) as {
    choices: Array<{ message: { content: string }; logprobs: { content: Array<{ top_logprobs: Array<{ token: string; logprob: number }> }> } | null }>;
    usage: { prompt_tokens: number; completion_tokens: number };
  };
}

describe('SmolVLM folder', () => {
  it('loads as a vision-language model that takes images', () => {
    expect(engine.info.acceptedMedia).toEqual(['image']);
    expect(engine.loadReport.contract).toMatch(/inputs_embeds float32/);
    expect(engine.loadReport.multimodal).toBe('idefics3 image processor, onnx/vision_encoder.onnx');
  });

  it('chat with image_url parts: greedy output, prompt length and first-token logprobs equal the reference', async () => {
    for (const generation of expected.generations) {
      const body = await chat(chatBody(generation, { logprobs: true, top_logprobs: 5 }));
      expect(body.choices[0].message.content).toBe(generation.text);
      // The expanded prompt (tiles, markers, image tokens) is what the usage counts.
      expect(body.usage.prompt_tokens).toBe(generation.prompt_token_ids.length);
      const top = body.choices[0].logprobs!.content[0].top_logprobs;
      generation.top_logprobs!.forEach((entry, rank) => expect(top[rank].logprob).toBeCloseTo(entry.logprob, 3));
    }
  });

  it('the expanded prompt token ids follow the Idefics3 rule exactly', async () => {
    const generation = expected.generations[0];
    const body = await chat(chatBody(generation, { prompt_logprobs: 0 }));
    const res = body as unknown as { prompt_logprobs: Array<Record<string, { logprob: number }> | null> };
    // prompt_logprobs names every prompt token id: the rule's ids, from the Python reimplementation.
    const ids = res.prompt_logprobs.map((entry, index) => (index === 0 ? generation.prompt_token_ids[0] : Number(Object.keys(entry!)[0])));
    expect(ids).toEqual(generation.prompt_token_ids);
    const tok = engine.tokenizer;
    const image = tok.tokenToId('<image>')!;
    const tiles = 3 * 2 + 1;
    expect(ids.filter((id) => id === image).length).toBe(tiles * expected.image_seq_len!);
    expect(ids.filter((id) => id === tok.tokenToId('<fake_token_around_image>')).length).toBe(tiles + 1);
    expect(ids.filter((id) => id === tok.tokenToId('<row_3_col_2>')).length).toBe(1);
    expect(ids.filter((id) => id === tok.tokenToId('<global-img>')).length).toBe(1);
  });

  it('different images give different outputs', () => {
    const [tall, other] = expected.generations;
    expect(tall.text).not.toBe(other.text);
  });

  it('/generate with text and image_url parts equals the reference of the same prompt', async () => {
    const generation = expected.generations[0];
    // The chat template's prompt written by hand as parts: the image stands where it is.
    const res = await postJson(app, '/generate', {
      prompt: [
        { type: 'text', text: '<|im_start|>User:' },
        { type: 'image_url', image_url: imageDataUrl(generation.images[0]) },
        { type: 'text', text: `${generation.question}<end_of_utterance>\nAssistant:` },
      ],
      max_tokens: generation.max_tokens,
      temperature: 0,
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { text: string[] };
    expect(body.text[0]).toBe(`<|im_start|>User:<image>${generation.question}<end_of_utterance>\nAssistant:${generation.text}`);
  });

  it('a batch mixing text-only and image requests equals each alone, streamed or not', async () => {
    const solo = [];
    for (const generation of expected.generations) solo.push((await chat(chatBody(generation))).choices[0].message.content);
    const together = await Promise.all(
      expected.generations.map(async (generation, index) => {
        if (index % 2 === 0) return (await chat(chatBody(generation))).choices[0].message.content;
        const res = await postJson(app, '/v1/chat/completions', chatBody(generation, { stream: true }));
        const chunks = ssePayloads(await res.text()).filter((payload) => payload !== '[DONE]');
        return chunks.map((chunk) => (JSON.parse(chunk) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? '').join('');
      }),
    );
    expect(together).toEqual(solo);
    expect(solo).toEqual(expected.generations.map((generation) => generation.text));
  });

  it('n and best_of sample several sequences from one image prefill', async () => {
    const body = await chat(chatBody(expected.generations[0], { n: 2, temperature: 1, seed: 7 }));
    expect(body.choices).toHaveLength(2);
    expect(body.usage.prompt_tokens).toBe(expected.generations[0].prompt_token_ids.length);
  });

  it('a prompt that spells <image> itself is a 400, not a silent bare embedding', async () => {
    await expectError(
      postJson(app, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'look: <image>' }] }),
      400,
      'BadRequestError',
      'messages',
    );
    await expectError(postJson(app, '/v1/completions', { model: MODEL, prompt: 'look: <image>', max_tokens: 2 }), 400, 'BadRequestError');
  });

  it('image tokens count towards the context: a prompt whose images do not fit is a 400 before prefill', async () => {
    const images = Array.from({ length: 8 }, () => ({ type: 'image_url', image_url: { url: imageDataUrl('wide.jpg') } }));
    const message = await expectError(
      postJson(app, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: [...images, { type: 'text', text: 'all' }] }] }),
      400,
      'BadRequestError',
      'messages',
    );
    expect(message).toMatch(/512/);
  });

  it('images per prompt and tiles per image are bounded by settings: a 400 naming the part', async () => {
    const strict = createApp({
      engine,
      config: parseServerConfig({ modelDir: SMOLVLM_DIR, servedModelName: MODEL }),
      mediaFetcher: createMediaFetcher(resolveMediaConfig({ maxImagesPerPrompt: 1, maxImageTiles: 8 })),
    });
    const image = (name: string) => ({ type: 'image_url', image_url: { url: imageDataUrl(name) } });
    const twoImages = { model: MODEL, messages: [{ role: 'user', content: [image('tall.png'), image('other.png'), { type: 'text', text: 'x' }] }] };
    const tooMany = await expectError(postJson(strict, '/v1/chat/completions', twoImages), 400, 'BadRequestError', 'messages[0].content[1].image_url.url');
    expect(tooMany).toMatch(/at most 1 images \(MEDIA_MAX_IMAGES_PER_PROMPT\), got 2/);
    // wide.jpg becomes 3 x 3 tiles + the global image: 10 frames.
    const tiles = await expectError(
      postJson(strict, '/generate', { prompt: [{ type: 'text', text: 'a' }, { type: 'image_url', image_url: imageDataUrl('wide.jpg') }], max_tokens: 2 }),
      400,
      'BadRequestError',
      'prompt[1].image_url',
    );
    expect(tiles).toMatch(/3 x 3 tiles plus the global image, more than the 8 frames/);
  });

  it('beam search and structured output take an image prompt like a text one', async () => {
    const generation = expected.generations[0];
    const beams = await chat(chatBody(generation, { use_beam_search: true, n: 2, max_tokens: 4 }));
    expect(beams.choices[0].message.content.length).toBeGreaterThan(0);
    const guided = await chat(chatBody(generation, { guided_choice: ['red disc', 'blue sky'], max_tokens: 8 }));
    expect(['red disc', 'blue sky']).toContain(guided.choices[0].message.content);
  });

  it('a client that disconnects mid-stream stops its generation', async () => {
    const controller = new AbortController();
    const res = await postJson(app, '/v1/chat/completions', chatBody(expected.generations[0], { stream: true, max_tokens: 400, min_tokens: 400 }), {
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    await reader.cancel().catch(() => undefined);
    for (let i = 0; i < 100 && engine.stats().running > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(engine.stats().running).toBe(0);
  });
});
