/**
 * What decides an embedding model's pooling, and what is refused at startup with the reason:
 * sentence-transformers' files in both the pooling_mode_* flag form (sentence-transformers
 * before 6, what the Hub's models carry) and v6's "pooling_mode", vLLM's defaults without
 * modules.json and its --pooler-config override; a graph that cannot be pooled.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EmbeddingEngine } from '../../src/embeddings/embedding-engine.js';
import type { EmbeddingModel } from '../../src/embeddings/embedding-model.js';
import { embeddingPromptsOf, matryoshkaOf, poolingSpecOf } from '../../src/embeddings/pooling-config.js';
import { createNodeEmbeddingEngine } from '../../src/runtime/node/embedding-engine.js';

const ST3 = (pooling: Record<string, unknown>, extra: unknown[] = []) => ({
  modules: [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
    ...extra,
  ],
  moduleConfigs: { '1_Pooling': pooling },
});

describe('poolingSpecOf', () => {
  it("reads the pooling_mode_* flags of sentence-transformers before 6 (all-MiniLM-L6-v2's files)", () => {
    const files = ST3({ word_embedding_dimension: 384, pooling_mode_cls_token: false, pooling_mode_mean_tokens: true, pooling_mode_max_tokens: false }, [
      { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
    ]);
    expect(poolingSpecOf(files, { decoder: false })).toEqual({ mode: 'mean', normalize: true, source: 'modules.json' });
  });

  it('does not normalize without a Normalize module', () => {
    expect(poolingSpecOf(ST3({ pooling_mode_cls_token: true }), { decoder: false })).toMatchObject({ mode: 'cls', normalize: false });
  });

  it('refuses with the reason what it cannot run: max pooling, several modes, a Dense projection, CLS on a decoder', () => {
    expect(() => poolingSpecOf(ST3({ pooling_mode_max_tokens: true }), { decoder: false })).toThrow(/pooling_mode_max_tokens|"max" pooling/);
    expect(() => poolingSpecOf(ST3({ pooling_mode: ['cls', 'mean'] }), { decoder: false })).toThrow(/several pooling modes/);
    const dense = ST3({ pooling_mode: 'mean' }, [{ idx: 2, name: '2', path: '2_Dense', type: 'sentence_transformers.models.Dense' }]);
    expect(() => poolingSpecOf(dense, { decoder: false })).toThrow(/Dense projection is not in the ONNX graph/);
    expect(() => poolingSpecOf(ST3({ pooling_mode: 'cls' }), { decoder: true })).toThrow(/CLS pooling on a decoder/);
    expect(() => poolingSpecOf(ST3({ pooling_mode: 'lasttoken', include_prompt: false }), { decoder: true })).toThrow(/include_prompt/);
  });

  it("takes vLLM's defaults without modules.json, and the operator's --pooler-config over the files", () => {
    expect(poolingSpecOf({}, { decoder: false })).toMatchObject({ mode: 'cls', normalize: true });
    expect(poolingSpecOf({}, { decoder: true })).toMatchObject({ mode: 'last', normalize: true });
    expect(poolingSpecOf(ST3({ pooling_mode: 'cls' }), { decoder: false }, { poolingType: 'MEAN', normalize: false })).toEqual({
      mode: 'mean',
      normalize: false,
      source: 'poolerConfig',
    });
    expect(() => poolingSpecOf({}, { decoder: false }, { poolingType: 'STEP' })).toThrow(/not served/);
  });
});

describe('prompts and Matryoshka from the folder', () => {
  it("reads config_sentence_transformers.json's prompts and default", () => {
    expect(embeddingPromptsOf({ prompts: { query: 'q: ', document: '' }, default_prompt_name: 'query' })).toEqual({
      prompts: { query: 'q: ', document: '' },
      defaultPromptName: 'query',
    });
    expect(embeddingPromptsOf(undefined)).toEqual({ prompts: {}, defaultPromptName: null });
  });

  it("decides dimensions as vLLM does: matryoshka_dimensions, else is_matryoshka, else none", () => {
    expect(matryoshkaOf({ matryoshka_dimensions: [64, 128] })).toEqual({ dimensions: [64, 128] });
    expect(matryoshkaOf({ is_matryoshka: true })).toEqual({ dimensions: 'any' });
    expect(matryoshkaOf({})).toBeNull();
  });
});

describe('startup refusals', () => {
  it('refuses a text-generation graph as an embedding model, naming what is missing', async () => {
    const refused = createNodeEmbeddingEngine({ modelDir: join('models', 'stories260k'), limits: { maxRunningSequences: 4, maxBatchedTokens: 512, maxWaitingRequests: 4 } });
    await expect(refused).rejects.toThrow(/cannot be served: the graph has no last_hidden_state output.*feature-extraction/);
  });
});

describe('the queue', () => {
  /** A model that records each call's rows and answers a vector per row (its length, then zeros). */
  function recordingModel(calls: number[][][]): EmbeddingModel {
    return {
      async embed(rows: readonly (readonly number[])[]) {
        calls.push(rows.map((row) => [...row]));
        await new Promise((resolve) => setTimeout(resolve, 5));
        return rows.map((row) => Float32Array.from([row.length, row[0]!]));
      },
      async dispose() {},
    } as unknown as EmbeddingModel;
  }

  function engineOn(calls: number[][][], limits = { maxRunningSequences: 4, maxBatchedTokens: 64, maxWaitingRequests: 8 }): EmbeddingEngine {
    return new EmbeddingEngine({
      model: recordingModel(calls),
      tokenizer: {} as never,
      info: { id: 'm', maxModelLen: 32, vocabSize: 1000 },
      width: 2,
      pooling: { mode: 'mean', normalize: false, source: 'test' },
      matryoshka: null,
      prompts: { prompts: {}, defaultPromptName: null },
      limits,
    });
  }

  it('runs the inputs of concurrent requests in shared model calls, each request getting its own vectors in order', async () => {
    const calls: number[][][] = [];
    const engine = engineOn(calls);
    const [a, b] = await Promise.all([engine.embed({ inputs: [[1], [2, 2]] }), engine.embed({ inputs: [[3, 3, 3]] })]);
    expect(a.map((v) => Array.from(v))).toEqual([[1, 1], [2, 2]]);
    expect(b.map((v) => Array.from(v))).toEqual([[3, 3]]);
    expect(calls.length).toBeLessThanOrEqual(2);
    expect(calls.flat().length).toBe(3);
  });

  it('takes one input from each waiting request in turn, so a large request does not hold back a small one', async () => {
    const calls: number[][][] = [];
    const engine = engineOn(calls);
    const big = engine.embed({ inputs: Array.from({ length: 40 }, (_, i) => [100 + i]) });
    await new Promise((resolve) => setTimeout(resolve, 1));
    const small = engine.embed({ inputs: [[7]] });
    let smallDoneAt = -1;
    void small.then(() => (smallDoneAt = calls.length));
    await Promise.all([big, small]);
    // The big request's 40 inputs take 10 calls of 4; the small one rides in the second.
    expect(calls.length).toBeGreaterThanOrEqual(10);
    expect(smallDoneAt).toBeLessThanOrEqual(3);
  });

  it('bounds a call by padded tokens, and drops an aborted request\'s inputs that have not run', async () => {
    const calls: number[][][] = [];
    const engine = engineOn(calls);
    await engine.embed({ inputs: [new Array(30).fill(1), new Array(30).fill(1), new Array(30).fill(1)] });
    expect(calls.every((rows) => rows.length * Math.max(...rows.map((r) => r.length)) <= 64 || rows.length === 1)).toBe(true);
    const controller = new AbortController();
    const aborted = engine.embed({ inputs: Array.from({ length: 40 }, () => [5]), signal: controller.signal });
    controller.abort(new Error('client gone'));
    await expect(aborted).rejects.toThrow(/client gone/);
    const before = calls.length;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(calls.length - before).toBeLessThanOrEqual(1);
  });
});

describe('--runner auto', () => {
  it('serves a folder as an embedding model with modules.json, or an encoder naming no generation architecture; never a generating decoder', async () => {
    const { looksLikeEmbeddingModel } = await import('../../src/embeddings/load.js');
    expect(looksLikeEmbeddingModel({ model_type: 'qwen3', architectures: ['Qwen3ForCausalLM'] }, true)).toBe(true);
    expect(looksLikeEmbeddingModel({ model_type: 'bert', architectures: ['BertModel'] }, false)).toBe(true);
    expect(looksLikeEmbeddingModel({ model_type: 'bert', architectures: ['BertForMaskedLM'] }, false)).toBe(true);
    expect(looksLikeEmbeddingModel({ model_type: 'ultravox', architectures: ['UltravoxModel'] }, false)).toBe(false);
    expect(looksLikeEmbeddingModel({ model_type: 'llama', architectures: ['LlamaForCausalLM'] }, false)).toBe(false);
    expect(looksLikeEmbeddingModel({ model_type: 'roberta', architectures: ['RobertaForCausalLM'] }, false)).toBe(false);
    expect(looksLikeEmbeddingModel({}, false)).toBe(false);
  });
});
