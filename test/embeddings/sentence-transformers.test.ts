/**
 * The embedding fixtures (scripts/embeddings/build_fixtures.py: tiny seeded models saved by
 * sentence-transformers, exported to ONNX in the Optimum layout) served by our engine, against
 * sentence-transformers' own `encode` on the same weights: the tokenizer's ids exactly, each
 * vector with cosine ≥ 0.9999, alone and in one batch, and unit norm where the model normalizes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddingEngine } from '../../src/embeddings/embedding-engine.js';
import { createNodeEmbeddingEngine } from '../../src/runtime/node/embedding-engine.js';
import { cosine } from '../helpers/vectors.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'embeddings');
const LIMITS = { maxRunningSequences: 64, maxBatchedTokens: 8192, maxWaitingRequests: 16 };

interface Reference {
  texts: string[];
  ids: number[][];
  solo: number[][];
  batched: number[][];
  truncate_dim?: Record<string, number[][]>;
  prompts?: Record<string, number[][]>;
  prompt_ids?: Record<string, number[][]>;
}

function reference(name: string): Reference {
  return JSON.parse(readFileSync(join(FIXTURES, name, 'reference.json'), 'utf8')) as Reference;
}


function norm(a: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < a.length; i += 1) sum += a[i]! * a[i]!;
  return Math.sqrt(sum);
}

function expectClose(got: Float32Array[], want: number[][]): void {
  expect(got.map((vector) => vector.length)).toEqual(want.map((vector) => vector.length));
  got.forEach((vector, i) => {
    expect(cosine(vector, want[i]!), `vector ${i}`).toBeGreaterThanOrEqual(0.9999);
    expect(norm(vector)).toBeCloseTo(norm(want[i]!), 4);
  });
}

describe.each([
  ['bert-wordpiece', 'mean'],
  ['xlmr-unigram', 'cls'],
  ['qwen3-decoder', 'last'],
  ['modernbert-bpe', 'mean'],
])('%s (%s pooling) against sentence-transformers', (name, mode) => {
  const ref = reference(name);
  let engine: EmbeddingEngine;
  beforeAll(async () => {
    engine = await createNodeEmbeddingEngine({ modelDir: join(FIXTURES, name), limits: LIMITS, intraOpNumThreads: 1 });
  });
  afterAll(async () => engine?.dispose());

  it('reads the pooling and normalization from the sentence-transformers files', () => {
    expect(engine.pooling).toMatchObject({ mode, normalize: true, source: 'modules.json' });
    expect(engine.width).toBe(ref.solo[0]!.length);
  });

  it("tokenizes every text to the tokenizer's ids", () => {
    expect(ref.texts.map((text) => engine.tokenizer.encode(text))).toEqual(ref.ids);
  });

  it('embeds each text alone as encode does', async () => {
    const solo: Float32Array[] = [];
    for (const ids of ref.ids) solo.push(...(await engine.embed({ inputs: [ids] })));
    expectClose(solo, ref.solo);
    for (const vector of solo) expect(norm(vector)).toBeCloseTo(1, 5);
  });

  it('embeds all texts in one batch as encode does', async () => {
    const before = engine.stats().steps;
    expectClose(await engine.embed({ inputs: ref.ids }), ref.batched);
    expect(engine.stats().steps - before).toBe(1);
  });
});

describe('Matryoshka dimensions (xlmr-unigram: config.json matryoshka_dimensions)', () => {
  it('cuts then normalizes: the direction of encode(truncate_dim), at unit norm', async () => {
    const ref = reference('xlmr-unigram');
    const engine = await createNodeEmbeddingEngine({ modelDir: join(FIXTURES, 'xlmr-unigram'), limits: LIMITS, intraOpNumThreads: 1 });
    try {
      expect(engine.matryoshka).toEqual({ dimensions: [8, 16] });
      for (const [dims, want] of Object.entries(ref.truncate_dim!)) {
        const got = await engine.embed({ inputs: ref.ids, dimensions: Number(dims) });
        got.forEach((vector, i) => {
          expect(vector.length).toBe(Number(dims));
          expect(cosine(vector, want[i]!)).toBeGreaterThanOrEqual(0.9999);
          expect(norm(vector)).toBeCloseTo(1, 5);
        });
      }
    } finally {
      await engine.dispose();
    }
  });
});

describe('decoder prompts (qwen3-decoder: config_sentence_transformers.json)', () => {
  it("reads the prompts; the prompt's text in front of the input gives encode(prompt_name=...)", async () => {
    const ref = reference('qwen3-decoder');
    const engine = await createNodeEmbeddingEngine({ modelDir: join(FIXTURES, 'qwen3-decoder'), limits: LIMITS, intraOpNumThreads: 1 });
    try {
      expect(Object.keys(engine.prompts.prompts).sort()).toEqual(['document', 'query']);
      for (const [promptName, want] of Object.entries(ref.prompts!)) {
        const prompt = engine.prompts.prompts[promptName]!;
        const ids = ref.texts.map((text) => engine.tokenizer.encode(prompt + text));
        expect(ids).toEqual(ref.prompt_ids![promptName]);
        expectClose(await engine.embed({ inputs: ids }), want);
      }
    } finally {
      await engine.dispose();
    }
  });
});

describe("transformers.js's feature-extraction pipeline on the same folders (the peer the bench times)", () => {
  it.each([
    ['bert-wordpiece', 'mean'],
    ['xlmr-unigram', 'cls'],
  ] as const)('%s: equals sentence-transformers too, so the fixtures are the layout users load', async (name, pooling) => {
    const { env, pipeline } = await import('@huggingface/transformers');
    env.localModelPath = `${FIXTURES}/`;
    env.allowRemoteModels = false;
    const ref = reference(name);
    const extractor = await pipeline('feature-extraction', name, { dtype: 'fp32' });
    try {
      const vectors = (await extractor(ref.texts, { pooling, normalize: true })).tolist() as number[][];
      vectors.forEach((vector, i) => expect(cosine(vector, ref.batched[i]!)).toBeGreaterThanOrEqual(0.9999));
    } finally {
      await extractor.dispose();
    }
  });
});
