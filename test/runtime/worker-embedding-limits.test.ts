/**
 * The embedding Worker's build (scripts/build-worker-embeddings.ts) and the limits it checks
 * (src/runtime/worker/embedding-limits.ts): it bundles a folder that fits, with its JSON
 * files and graph; refuses one past Cloudflare's Worker size (64 MiB) or isolate memory
 * (128 MB) with the figures; and lowers the padded tokens of one model call to what the
 * isolate can hold for a MiniLM-sized model.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildWorkerEmbeddings } from '../../scripts/build-worker-embeddings.js';
import { CLOUDFLARE_EMBEDDING_LIMITS, planWorkerEmbedding, workerEmbeddingPeakBytes } from '../../src/runtime/worker/embedding-limits.js';
import { REPO_ROOT } from '../helpers/model.js';

const dir = mkdtempSync(join(tmpdir(), 'worker-embedding-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const FIXTURE = join(REPO_ROOT, 'test/fixtures/embeddings/bert-wordpiece');

describe('the embedding Worker build', () => {
  it('bundles a folder that fits: the graph as is, the JSON files sentence-transformers and the tokenizer need', async () => {
    const outDir = join(dir, 'fits');
    const { name, plan } = await buildWorkerEmbeddings({ environment: { EMBEDDING_MODEL: 'test/fixtures/embeddings/bert-wordpiece' }, outDir });
    expect(name).toBe('bert-wordpiece');
    expect(readFileSync(join(outDir, 'model.onnx')).equals(readFileSync(join(FIXTURE, 'onnx/model.onnx')))).toBe(true);
    const info = JSON.parse(readFileSync(join(outDir, 'model.json'), 'utf8'));
    expect(info).toMatchObject({ name, onnxFile: 'onnx/model.onnx' });
    expect(info.files.config).toEqual(JSON.parse(readFileSync(join(FIXTURE, 'config.json'), 'utf8')));
    expect(info.files.tokenizerJson).toEqual(JSON.parse(readFileSync(join(FIXTURE, 'tokenizer.json'), 'utf8')));
    expect(info.files.moduleConfigs['1_Pooling']).toEqual(JSON.parse(readFileSync(join(FIXTURE, '1_Pooling/config.json'), 'utf8')));
    // A 2-layer, 32-wide model at its 64-token context: the server's 8192 tokens a call fit.
    expect(plan.maxBatchedTokens).toBe(8192);
    expect(plan.peakBytes).toBeLessThan(128e6);
  });

  it('refuses a graph past the 64 MiB Worker size limit, with the figures', async () => {
    const folder = join(dir, 'too-large');
    cpSync(FIXTURE, folder, { recursive: true });
    truncateSync(join(folder, 'onnx/model.onnx'), 90 * 1e6); // all-MiniLM-L6-v2's float32 graph is 90.4 MB
    await expect(buildWorkerEmbeddings({ environment: { EMBEDDING_MODEL: folder }, outDir: join(dir, 'size') })).rejects.toThrow(
      /^Cannot bundle the embedding model ".*too-large" into the Worker: too-large is 85\.8 MiB: with the Worker's code \([\d.]+ MiB\) the upload would be [\d.]+ MiB, over the Worker size limit of 64\.0 MiB\. .*model_quantized\.onnx/,
    );
  });

  it('refuses a folder whose session would not fit the isolate’s memory, and takes it with a larger cap', async () => {
    const environment = { EMBEDDING_MODEL: 'test/fixtures/embeddings/bert-wordpiece', ISOLATE_MEMORY_BYTES: '25000000' };
    await expect(buildWorkerEmbeddings({ environment, outDir: join(dir, 'memory') })).rejects.toThrow(
      /would need about [\d.]+ MiB in the isolate while onnxruntime creates its session .* more than the isolate's 23\.8 MiB \(ISOLATE_MEMORY_BYTES; a Cloudflare Worker has 128 MB\)/,
    );
  });
});

describe('the isolate’s memory plan', () => {
  // all-MiniLM-L6-v2: 6 layers, 384 wide, 12 heads, 1536 in the feed-forward, 256 tokens (its sentence_bert_config.json max_seq_length).
  const minilm = { hidden: 384, heads: 12, intermediate: 1536, layers: 6, context: 256 };
  // Xenova/all-MiniLM-L6-v2's onnx/model_quantized.onnx is 22.9 MB; scripts/embeddings/measure-worker-memory.ts measured
  // 107.1 MiB at the peak for a random export of that shape (22.7 MB) with 3 × 256 tokens a call.
  const int8Bytes = 22.9e6;

  it('keeps the server’s tokens a call when they fit, and lowers them when the longest input’s attention would not', () => {
    const kept = planWorkerEmbedding('all-MiniLM-L6-v2', int8Bytes, minilm, 512, CLOUDFLARE_EMBEDDING_LIMITS);
    expect(kept.maxBatchedTokens).toBe(512);
    const lowered = planWorkerEmbedding('all-MiniLM-L6-v2', int8Bytes, minilm, 8192, CLOUDFLARE_EMBEDDING_LIMITS);
    expect(lowered.maxBatchedTokens).toBeLessThan(1024);
    expect(lowered.maxBatchedTokens).toBeGreaterThanOrEqual(2 * minilm.context);
    expect(lowered.peakBytes).toBeLessThanOrEqual(CLOUDFLARE_EMBEDDING_LIMITS.memoryBytes);
    // One token more would not fit.
    expect(workerEmbeddingPeakBytes(int8Bytes, minilm, lowered.maxBatchedTokens + 1, minilm.context)).toBeGreaterThan(CLOUDFLARE_EMBEDDING_LIMITS.memoryBytes);
  });

  it('refuses an int8 bge-small (33.5 MB): its session alone is past 128 MB (142.9 MiB measured)', () => {
    expect(() => planWorkerEmbedding('bge-small-en-v1.5', 33.5e6, { ...minilm, layers: 12, context: 512 }, 8192, CLOUDFLARE_EMBEDDING_LIMITS)).toThrow(
      /^bge-small-en-v1\.5 would need about [\d.]+ MiB in the isolate while onnxruntime creates its session .* A graph of at most about 24\.0 MiB fits\.$/,
    );
  });

  it('refuses a model whose one full-context input would not fit', () => {
    const wide = { hidden: 1024, heads: 16, intermediate: 4096, layers: 24, context: 8192 };
    expect(() => planWorkerEmbedding('wide', 20e6, wide, 8192, CLOUDFLARE_EMBEDDING_LIMITS)).toThrow(
      /one input of its full context \(8192 tokens\) would need about [\d.]+ GiB of activations beside [\d.]+ MiB resident, more than the isolate's 122\.1 MiB/,
    );
  });
});
