/**
 * An embedding model in the Worker as a deployment runs it: `wrangler dev --env embeddings`
 * with the repository's wrangler.toml, whose build step bundles the folder
 * [env.embeddings.vars] EMBEDDING_MODEL names (test/fixtures/embeddings/bert-wordpiece) and
 * whose isolate loads it on the first request, on onnxruntime-web's WebAssembly backend.
 * The official openai client's `embeddings.create` against it must give
 * sentence-transformers' `encode` vectors on the same weights (reference.json, made by
 * scripts/embeddings/build_fixtures.py), alone and batched.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/model.js';
import { cosine } from '../helpers/vectors.js';

process.env.WRANGLER_SEND_METRICS = 'false';
process.env.CLOUDFLARE_CF_FETCH_ENABLED = 'false';
process.env.WRANGLER_HIDE_BANNER = 'true';
// The build reads wrangler.toml's EMBEDDING_MODEL unless the environment names one.
delete process.env.EMBEDDING_MODEL;
const { unstable_startWorker } = await import('wrangler');

const MODEL = 'bert-wordpiece';
const reference = JSON.parse(readFileSync(join(REPO_ROOT, 'test/fixtures/embeddings', MODEL, 'reference.json'), 'utf8')) as {
  texts: string[];
  ids: number[][];
  solo: number[][];
  batched: number[][];
};

let worker: Awaited<ReturnType<typeof unstable_startWorker>>;
let url: string;
let client: OpenAI;

beforeAll(async () => {
  worker = await unstable_startWorker({
    config: `${REPO_ROOT}wrangler.toml`,
    env: 'embeddings',
    dev: { server: { hostname: '127.0.0.1', port: 0 }, inspector: false, watch: false, persist: false, remote: false, logLevel: 'warn' },
  });
  url = (await worker.url).origin;
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'not-needed', maxRetries: 0 });
}, 240_000);

afterAll(async () => {
  await worker?.dispose();
});


function expectVectors(got: Array<{ embedding: number[]; index: number }>, want: number[][]): void {
  expect(got.map((item) => item.index)).toEqual(want.map((_, i) => i));
  got.forEach((item, i) => {
    expect(item.embedding.length).toBe(want[i]!.length);
    expect(cosine(item.embedding, want[i]!), `input ${i}`).toBeGreaterThanOrEqual(0.9999);
    expect(Math.hypot(...item.embedding)).toBeCloseTo(1, 4);
  });
}

describe('wrangler dev --env embeddings', () => {
  it('bundled the folder wrangler.toml names and serves it under its name', async () => {
    const bundled = JSON.parse(readFileSync(join(REPO_ROOT, 'dist/worker-embeddings/model.json'), 'utf8')) as { name: string; onnxFile: string };
    expect(bundled).toMatchObject({ name: MODEL, onnxFile: 'onnx/model.onnx' });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual([MODEL]);
  }, 120_000);

  it('embeds one string as sentence-transformers encode does, with usage', async () => {
    const response = await client.embeddings.create({ model: MODEL, input: reference.texts[0]!, encoding_format: 'float' });
    expectVectors(response.data, [reference.solo[0]!]);
    expect(response.usage).toMatchObject({ prompt_tokens: reference.ids[0]!.length, total_tokens: reference.ids[0]!.length });
  }, 60_000);

  it('embeds a list in order as encode does for the batch (the client asks for base64 and decodes it)', async () => {
    const texts = reference.texts.filter((text) => text !== '');
    const response = await client.embeddings.create({ model: MODEL, input: texts });
    expectVectors(response.data, reference.batched.filter((_, i) => reference.texts[i] !== ''));
    const tokens = reference.ids.filter((_, i) => reference.texts[i] !== '').reduce((sum, ids) => sum + ids.length, 0);
    expect(response.usage.prompt_tokens).toBe(tokens);
  }, 60_000);

  it('gives each of several concurrent requests its own vectors', async () => {
    const responses = await Promise.all(reference.texts.slice(0, 5).map((input) => client.embeddings.create({ model: MODEL, input, encoding_format: 'float' })));
    responses.forEach((response, i) => expectVectors(response.data, [reference.solo[i]!]));
  }, 60_000);

  it('refuses what the model cannot do with a 400 in the API’s shape', async () => {
    const dimensions = await client.embeddings.create({ model: MODEL, input: 'hi', dimensions: 8 }).catch((error: unknown) => error);
    expect(dimensions).toBeInstanceOf(OpenAI.BadRequestError);
    expect((dimensions as Error).message).toMatch(/does not support matryoshka representation/);
    const chat = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }).catch((error: unknown) => error);
    expect(chat).toBeInstanceOf(OpenAI.BadRequestError);
    expect((chat as Error).message).toMatch(/does not support Chat Completions API.*"embed" task/);
    const tooLong = await client.embeddings.create({ model: MODEL, input: 'dog '.repeat(200) }).catch((error: unknown) => error);
    expect(tooLong).toBeInstanceOf(OpenAI.BadRequestError);
    expect((tooLong as Error).message).toMatch(/maximum context length/);
  }, 60_000);
});
