/**
 * GGUF embedding models as llama.cpp's converter writes them (test/fixtures/embeddings/gguf,
 * made by scripts/embeddings/build_gguf_fixtures.py with convert_hf_to_gguf.py from seeded
 * sentence-transformers models): a Qwen3-Embedding-style decoder whose header sets
 * qwen3.pooling_type LAST, and a BERT file. The decoder is served for /v1/embeddings: its
 * vectors must equal llama-server --embedding's on the same file and sentence-transformers'
 * encode on the same weights (reference.json), alone and batched, and its tokens
 * llama-server's /tokenize. The BERT file is refused at startup with the reason; neither is
 * ever served as a chat model.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddingEngine } from '../../src/embeddings/embedding-engine.js';
import { openGgufModelAt } from '../../src/gguf/node-gguf.js';
import { createNodeEmbeddingEngine } from '../../src/runtime/node/embedding-engine.js';
import { spawnFailingServer, spawnServer, type RunningServer } from '../e2e/spawn-server.js';
import { REPO_ROOT } from '../helpers/model.js';
import { cosine } from '../helpers/vectors.js';

const DIR = join(REPO_ROOT, 'test/fixtures/embeddings/gguf');
const QWEN3 = 'qwen3-embedding-f32.gguf';
const BERT = 'bert-wordpiece-f32.gguf';

interface Reference {
  texts: string[];
  ids: number[][];
  llama_server: number[][];
  sentence_transformers: number[][];
  cosine_llama_server_vs_sentence_transformers: number[];
}
const reference = JSON.parse(readFileSync(join(DIR, 'reference.json'), 'utf8')) as Record<string, Reference>;


function expectBoth(got: ArrayLike<number>[], ref: Reference, rows: number[]): void {
  got.forEach((vector, i) => {
    const row = rows[i]!;
    expect(vector.length).toBe(ref.llama_server[row]!.length);
    expect(cosine(vector, ref.llama_server[row]!), `llama-server, input ${row}`).toBeGreaterThanOrEqual(0.9999);
    expect(cosine(vector, ref.sentence_transformers[row]!), `sentence-transformers, input ${row}`).toBeGreaterThanOrEqual(0.9999);
    expect(Math.hypot(...Array.from(vector))).toBeCloseTo(1, 4);
  });
}

describe('a Qwen3-Embedding-style GGUF (qwen3.pooling_type LAST)', () => {
  const ref = reference[QWEN3]!;
  let engine: EmbeddingEngine;
  beforeAll(async () => {
    engine = await createNodeEmbeddingEngine({ modelDir: join(DIR, QWEN3), limits: { maxRunningSequences: 64, maxBatchedTokens: 8192, maxWaitingRequests: 16 }, intraOpNumThreads: 1 });
  });
  afterAll(async () => {
    await engine?.dispose();
  });

  it('tokenizes as llama-server does for --embedding (the end-of-text token appended, as the header says)', () => {
    ref.texts.forEach((text, i) => expect(engine.tokenizer.encode(text, { addSpecialTokens: true }), text).toEqual(ref.ids[i]));
  });

  it('embeds alone and batched as llama-server --embedding and sentence-transformers do', async () => {
    const alone: Float32Array[] = [];
    for (const ids of ref.ids) alone.push(...(await engine.embed({ inputs: [ids] })));
    expectBoth(alone, ref, ref.ids.map((_, i) => i));
    const batched = await engine.embed({ inputs: ref.ids });
    expectBoth(batched, ref, ref.ids.map((_, i) => i));
    expect(engine.notes.join('\n')).toMatch(/qwen3\.pooling_type LAST from the header/);
    expect(engine.pooling).toMatchObject({ mode: 'last', normalize: true });
  });

  it('is refused when opened as a generation model, saying how to serve it', async () => {
    await expect(openGgufModelAt(join(DIR, QWEN3))).rejects.toThrow(
      /its header sets qwen3\.pooling_type LAST: it is an embedding model that llama\.cpp serves with --embedding, not a text generation model\. Serve it for \/v1\/embeddings with --runner pooling/,
    );
    // A generation file of the same architecture opens as before.
    expect((await openGgufModelAt(join(REPO_ROOT, 'test/fixtures/gguf/tiny-qwen3.gguf'))).config.model_type).toBe('qwen3');
  });
});

describe('the same weights in Q8_0 (convert_hf_to_gguf.py --outtype q8_0)', () => {
  it('embeds within quantization of llama-server --embedding on that file, its 8-bit codes kept as MatMulNBits', async () => {
    const ref = reference['qwen3-embedding-q8_0.gguf']!;
    const engine = await createNodeEmbeddingEngine({ modelDir: join(DIR, 'qwen3-embedding-q8_0.gguf'), limits: { maxRunningSequences: 64, maxBatchedTokens: 8192, maxWaitingRequests: 16 }, intraOpNumThreads: 1 });
    try {
      expect(engine.notes.join('\n')).toMatch(/GGUF Q8_0 ×\d+: MatMulNBits\/GatherBlockQuantized, 8-bit codes/);
      ref.texts.forEach((text, i) => expect(engine.tokenizer.encode(text, { addSpecialTokens: true })).toEqual(ref.ids[i]));
      const got = await engine.embed({ inputs: ref.ids });
      got.forEach((vector, i) => {
        // Seeded random weights magnify 8-bit rounding: llama-server's own Q8_0 vectors are 0.9988-0.9997 from the float32 model's.
        expect(cosine(vector, ref.llama_server[i]!), `llama-server, input ${i}`).toBeGreaterThanOrEqual(0.999);
        expect(cosine(vector, ref.sentence_transformers[i]!), `sentence-transformers, input ${i}`).toBeGreaterThanOrEqual(0.998);
      });
    } finally {
      await engine.dispose();
    }
  });
});

describe('npm start on the Qwen3 GGUF, and the openai client', () => {
  const ref = reference[QWEN3]!;
  let server: RunningServer;
  let client: OpenAI;
  beforeAll(async () => {
    server = await spawnServer({ MODEL_DIR: join(DIR, QWEN3) });
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-needed', maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('serves /v1/embeddings (runner auto: the header’s pooling type) with llama-server’s vectors', async () => {
    expect(server.output()).toMatch(/Embedding model \(decoder, qwen3\).*LAST-TOKEN pooling, normalized/i);
    const response = await client.embeddings.create({ model: QWEN3, input: ref.texts });
    expectBoth(response.data.map((item) => item.embedding), ref, ref.texts.map((_, i) => i));
    expect(response.usage.prompt_tokens).toBe(ref.ids.reduce((sum, ids) => sum + ids.length, 0));
    const chat = await client.chat.completions.create({ model: QWEN3, messages: [{ role: 'user', content: 'hi' }] }).catch((error: unknown) => error);
    expect(chat).toBeInstanceOf(OpenAI.BadRequestError);
  });
});

describe('a BERT GGUF', () => {
  it('is refused at startup with the reason and what serves it here', async () => {
    await expect(openGgufModelAt(join(DIR, BERT), { embedding: true })).rejects.toThrow(
      /architecture bert is an encoder, an embedding model \(bert\.pooling_type MEAN\) that llama\.cpp serves with --embedding\. GGUF encoder models are not served by this server yet: serve the model's ONNX export/,
    );
    const { code, output } = await spawnFailingServer({ MODEL_DIR: join(DIR, BERT) });
    expect(code).not.toBe(0);
    expect(output).toMatch(/architecture bert is an encoder/);
    // The fixture is a real embedding file: llama-server serves it as sentence-transformers encodes.
    for (const value of reference[BERT]!.cosine_llama_server_vs_sentence_transformers) expect(value).toBeGreaterThan(0.9999);
  });
});
