/**
 * `POST /v1/embeddings` as a user meets it: `npm start` pointed at an embedding model folder
 * (test/fixtures/embeddings, built by scripts/embeddings/build_fixtures.py), and the official
 * openai client's `embeddings.create`. The vectors are checked against sentence-transformers'
 * `encode` on the same weights (reference.json), alone and batched; the refusals against
 * vLLM's words.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnFailingServer, spawnServer, type RunningServer } from './spawn-server.js';
import { cosine } from '../helpers/vectors.js';

const FIXTURES = join('test', 'fixtures', 'embeddings');

interface Reference {
  texts: string[];
  ids: number[][];
  solo: number[][];
  batched: number[][];
  truncate_dim?: Record<string, number[][]>;
}

const reference = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name, 'reference.json'), 'utf8')) as Reference;


const norm = (a: ArrayLike<number>) => Math.sqrt(Array.from(a).reduce((sum, v) => sum + v * v, 0));

function expectVectors(got: Array<{ embedding: number[]; index: number }>, want: number[][]): void {
  expect(got.map((item) => item.index)).toEqual(want.map((_, i) => i));
  got.forEach((item, i) => {
    expect(item.embedding.length).toBe(want[i]!.length);
    expect(cosine(item.embedding, want[i]!), `input ${i}`).toBeGreaterThanOrEqual(0.9999);
    expect(norm(item.embedding)).toBeCloseTo(1, 4);
  });
}

/** A server on `modelDir` for the describe block, with the official client pointed at it. */
function served(env: Record<string, string>): { readonly client: OpenAI; readonly url: string; readonly output: () => string } {
  let server: RunningServer | undefined;
  let client: OpenAI | undefined;
  beforeAll(async () => {
    server = await spawnServer(env);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-needed', maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.stop();
  });
  return {
    get client() {
      return client!;
    },
    get url() {
      return server!.url;
    },
    output: () => server?.output() ?? '',
  };
}

describe('an encoder embedding model (BERT, WordPiece, mean pooling)', () => {
  const ref = reference('bert-wordpiece');
  const server = served({ MODEL_DIR: join(FIXTURES, 'bert-wordpiece') });

  it('says at startup what it serves and how it pools', () => {
    expect(server.output()).toMatch(/Embedding model \(encoder, bert\).*32 dimensions, MEAN pooling, normalized \(modules\.json\)/);
  });

  it('embeds one string as sentence-transformers encode does, with usage', async () => {
    const response = await server.client.embeddings.create({ model: 'bert-wordpiece', input: ref.texts[0]!, encoding_format: 'float' });
    expect(response.object).toBe('list');
    expect(response.model).toBe('bert-wordpiece');
    expectVectors(response.data, [ref.solo[0]!]);
    expect(response.usage).toMatchObject({ prompt_tokens: ref.ids[0]!.length, total_tokens: ref.ids[0]!.length });
  });

  it('embeds a list of strings in order, as encode does for the batch (the client asks for base64 and decodes it)', async () => {
    const response = await server.client.embeddings.create({ model: 'bert-wordpiece', input: ref.texts });
    expectVectors(response.data, ref.batched);
    expect(response.usage.prompt_tokens).toBe(ref.ids.reduce((sum, ids) => sum + ids.length, 0));
  });

  it('sends base64 of little-endian float32 when asked', async () => {
    const body = await (await fetch(`${server.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: ref.texts[1], encoding_format: 'base64' }),
    })).json() as { data: Array<{ embedding: string }> };
    const bytes = Buffer.from(body.data[0]!.embedding, 'base64');
    const vector = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    expect(cosine(vector, ref.solo[1]!)).toBeGreaterThanOrEqual(0.9999);
  });

  it('takes token ids and lists of token ids', async () => {
    const one = await server.client.embeddings.create({ model: 'bert-wordpiece', input: ref.ids[2]!, encoding_format: 'float' });
    expectVectors(one.data, [ref.solo[2]!]);
    const many = await server.client.embeddings.create({ model: 'bert-wordpiece', input: ref.ids.slice(0, 3), encoding_format: 'float' });
    expectVectors(many.data, ref.solo.slice(0, 3));
  });

  it('gives each of many concurrent requests its own vectors (they share model calls)', async () => {
    const responses = await Promise.all(
      ref.texts.map((text) => server.client.embeddings.create({ model: 'bert-wordpiece', input: [text, text], encoding_format: 'float' })),
    );
    responses.forEach((response, i) => expectVectors(response.data, [ref.solo[i]!, ref.solo[i]!]));
  });

  it('embeds more inputs in one request than one engine step runs sequences (they share model calls; OpenAI takes 2048)', async () => {
    const many = Array.from({ length: 100 }, (_, i) => ref.texts[i % 7]!);
    const response = await server.client.embeddings.create({ model: 'bert-wordpiece', input: many, encoding_format: 'float' });
    expectVectors(response.data, many.map((_, i) => ref.solo[i % 7]!));
  });

  it('keeps the special tokens and the last tokens with truncate_prompt_tokens (vLLM truncates on the left)', async () => {
    const text = ref.texts[6]!;
    const ids = ref.ids[6]!;
    const kept = [ids[0]!, ...ids.slice(ids.length - 4, ids.length - 1), ids[ids.length - 1]!];
    const body = { model: 'bert-wordpiece', input: text, encoding_format: 'float', truncate_prompt_tokens: 5 } as unknown as OpenAI.EmbeddingCreateParams;
    const truncated = await server.client.embeddings.create(body);
    const direct = await server.client.embeddings.create({ model: 'bert-wordpiece', input: kept, encoding_format: 'float' });
    expect(truncated.usage.prompt_tokens).toBe(5);
    expect(cosine(truncated.data[0]!.embedding, direct.data[0]!.embedding)).toBeGreaterThan(0.99999);
  });

  it('refuses dimensions on a model not trained for it, as vLLM does', async () => {
    const error = await server.client.embeddings.create({ model: 'bert-wordpiece', input: 'hi', dimensions: 8 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/does not support matryoshka representation/);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('dimensions');
  });

  it('refuses an input past the context with vLLM words, and a list of inputs past the bound', async () => {
    const long = 'the dog ran in the park '.repeat(40);
    const error = await server.client.embeddings.create({ model: 'bert-wordpiece', input: long }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toMatch(/maximum context length is 64 tokens.*for embedding generation/);
    const tooMany = await server.client.embeddings.create({ model: 'bert-wordpiece', input: new Array(2049).fill('a') }).catch((e: unknown) => e);
    expect(tooMany).toBeInstanceOf(OpenAI.BadRequestError);
    expect((tooMany as Error).message).toMatch(/maxEmbeddingInputs/);
  });

  it('refuses bad shapes with a 400 naming the field, and another model with 404', async () => {
    const empty = await server.client.embeddings.create({ model: 'bert-wordpiece', input: [] }).catch((e: unknown) => e);
    expect(empty).toBeInstanceOf(OpenAI.BadRequestError);
    expect((empty as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input');
    const other = await server.client.embeddings.create({ model: 'gpt-4', input: 'hi' }).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('lists the model with its context, and tokenizes as the embeddings are fed', async () => {
    const models = await server.client.models.list();
    expect(models.data.map((model) => [model.id, (model as unknown as { max_model_len: number }).max_model_len])).toEqual([['bert-wordpiece', 64]]);
    const tokenized = await (await fetch(`${server.url}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: ref.texts[4] }),
    })).json() as { tokens: number[] };
    expect(tokenized.tokens).toEqual(ref.ids[4]);
  });

  it('answers the generation routes with vLLM\'s 400 for a pooling model', async () => {
    const error = await server.client.completions.create({ model: 'bert-wordpiece', prompt: 'hi', max_tokens: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toMatch(/does not support Completions API.*"embed" task/);
    const chat = await server.client.chat.completions.create({ model: 'bert-wordpiece', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect((chat as Error).message).toMatch(/does not support Chat Completions API/);
  });
});

describe('a Matryoshka model (XLM-R, Unigram, CLS pooling, matryoshka_dimensions [8, 16])', () => {
  const ref = reference('xlmr-unigram');
  const server = served({ MODEL_DIR: join(FIXTURES, 'xlmr-unigram') });

  it('cuts to the dimensions asked and normalizes after the cut', async () => {
    const response = await server.client.embeddings.create({ model: 'xlmr-unigram', input: ref.texts, dimensions: 8, encoding_format: 'float' });
    expectVectors(response.data, ref.truncate_dim!['8']!.map((vector) => vector.map((v) => v / norm(vector))));
  });

  it('refuses a size the model was not trained for', async () => {
    const error = await server.client.embeddings.create({ model: 'xlmr-unigram', input: 'hi', dimensions: 12 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toMatch(/only supports \[8, 16\] matryoshka dimensions/);
  });

  it('embeds a batch as encode does', async () => {
    const response = await server.client.embeddings.create({ model: 'xlmr-unigram', input: ref.texts, encoding_format: 'float' });
    expectVectors(response.data, ref.batched);
  });
});

describe('a decoder embedding model (Qwen3-Embedding layout, last-token pooling)', () => {
  const ref = reference('qwen3-decoder');
  const server = served({ MODEL_DIR: join(FIXTURES, 'qwen3-decoder') });

  it('embeds alone and batched as encode does', async () => {
    const alone = await server.client.embeddings.create({ model: 'qwen3-decoder', input: ref.texts[3]!, encoding_format: 'float' });
    expectVectors(alone.data, [ref.solo[3]!]);
    const batched = await server.client.embeddings.create({ model: 'qwen3-decoder', input: ref.texts, encoding_format: 'float' });
    expectVectors(batched.data, ref.batched);
  });
});

describe('a model the engine cannot serve as an embedding model', () => {
  it('is refused at startup with the reason (RUNNER=pooling on a text-generation export)', async () => {
    const exited = await spawnFailingServer({ RUNNER: 'pooling' });
    expect(exited.code).not.toBe(0);
    expect(exited.output).toMatch(/cannot be served: the graph has no last_hidden_state output/);
  });
});

describe('a chat model asked for embeddings', () => {
  const server = served({});

  it("gets vLLM's 400 naming the task", async () => {
    const error = await server.client.embeddings.create({ model: 'stories260k', input: 'Once upon a time' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toMatch(/does not support Embeddings API.*"generate" task/);
  });
});
