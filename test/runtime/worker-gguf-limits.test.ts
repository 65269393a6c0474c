/**
 * The GGUF Worker's limits (src/runtime/worker/gguf-limits.ts, src/gguf/gguf-footprint.ts):
 * the build step (scripts/build-worker-gguf.ts) bundles a file that fits and refuses one
 * past Cloudflare's Worker size (64 MiB) or isolate memory (128 MB) with the reason; and
 * the memory estimate it judges by bounds what building the committed fixtures really
 * holds (live bytes, measured after a full garbage collection at every tensor read).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { buildLlamaGguf } from '../../scripts/convert/llama-gguf.js';
import { writeGgufFile } from '../../scripts/convert/gguf-writer.js';
import { randomLlamaCheckpoint } from '../../scripts/convert/random-checkpoint.js';
import { buildWorkerGguf } from '../../scripts/build-worker-gguf.js';
import { ggufFootprint } from '../../src/gguf/gguf-footprint.js';
import { bytesByteSource, ggufModelFiles } from '../../src/gguf/gguf-model-files.js';
import { DEFAULT_GGUF_GRAPH_OPTIONS, openGgufModel } from '../../src/gguf/gguf-model.js';
import { REPO_ROOT } from '../helpers/model.js';

const dir = mkdtempSync(join(tmpdir(), 'worker-gguf-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TOKENIZER = readFileSync(join(REPO_ROOT, 'test/fixtures/stories260K/tok512.bin'));

/** A seeded random llama GGUF of `nLayers` layers of width 384 (1.8 M weights a layer). */
function writeLlamaGguf(name: string, nLayers: number, weights: 'F32' | 'Q4_0'): string {
  const checkpoint = randomLlamaCheckpoint({ dim: 384, hiddenDim: 1024, nLayers, nHeads: 6, nKvHeads: 6, vocabSize: 512, seqLen: 128 }, 27);
  const path = join(dir, name);
  writeGgufFile(path, buildLlamaGguf(checkpoint, TOKENIZER, { weights, name }));
  return path;
}

describe('the GGUF Worker build', () => {
  it('bundles a GGUF that fits, under its name', async () => {
    const outDir = join(dir, 'fits');
    const { name, plan } = await buildWorkerGguf({ environment: { MODEL_GGUF: 'test/fixtures/gguf/tiny-llama-kquants.gguf' }, outDir });
    expect(name).toBe('tiny-llama-kquants.gguf');
    expect(readFileSync(join(outDir, 'model.gguf')).equals(readFileSync(join(REPO_ROOT, 'test/fixtures/gguf/tiny-llama-kquants.gguf')))).toBe(true);
    expect(JSON.parse(readFileSync(join(outDir, 'model.json'), 'utf8'))).toMatchObject({ name, bytes: plan.fileBytes });
    expect(plan.peakBytes).toBeLessThan(128e6);
    expect(plan.kvBudgetBytes).toBeGreaterThan(50 * 2 ** 20);
  });

  it('refuses a GGUF whose graph would not build in an isolate’s 128 MB, with the figures', async () => {
    // 11 M weights in Q4_0: a 6 MiB file, far under the size limit, too many weights to build in memory.
    const path = writeLlamaGguf('eleven-million.gguf', 6, 'Q4_0');
    await expect(buildWorkerGguf({ environment: { MODEL_GGUF: path }, outDir: join(dir, 'memory') })).rejects.toThrow(
      /^Cannot bundle the GGUF ".*eleven-million.gguf" into the Worker: eleven-million.gguf would need about [\d.]+ MiB in the isolate while its graph is built \(the file [\d.]+ MiB, the build [\d.]+ MiB for 11\.\d M weights, .*\), more than the isolate's 122\.1 MiB \(ISOLATE_MEMORY_BYTES; a Cloudflare Worker has 128 MB\)\. A GGUF like this one fits with at most about [\d.]+ M weights\.$/,
    );
    // A self-hosted workerd without Cloudflare's cap takes it.
    const { plan } = await buildWorkerGguf({ environment: { MODEL_GGUF: path, ISOLATE_MEMORY_BYTES: '1000000000' }, outDir: join(dir, 'memory') });
    expect(plan.peakBytes).toBeGreaterThan(128e6);
  }, 60_000);

  it('refuses a GGUF past the 64 MiB Worker size limit, with the figures', async () => {
    const path = writeLlamaGguf('too-large.gguf', 12, 'F32');
    await expect(buildWorkerGguf({ environment: { MODEL_GGUF: path, ISOLATE_MEMORY_BYTES: '8000000000' }, outDir: join(dir, 'size') })).rejects.toThrow(
      /too-large.gguf is [\d.]+ MiB: with the Worker's code \(19\.0 MiB\) the upload would be [\d.]+ MiB, over the Worker size limit of 64\.0 MiB\. A Worker can bundle a GGUF of at most 45\.0 MiB\.$/,
    );
  }, 60_000);

  it('refuses a name that is not a .gguf file, or no file', async () => {
    await expect(buildWorkerGguf({ environment: { MODEL_GGUF: 'models/stories260k' } })).rejects.toThrow(/^MODEL_GGUF must name a \.gguf file/);
    await expect(buildWorkerGguf({ environment: { MODEL_GGUF: 'no/such/model.gguf' }, outDir: join(dir, 'none') })).rejects.toThrow(/^MODEL_GGUF: no file at .*no\/such\/model\.gguf$/);
  });
});

describe('the memory estimate', () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  // Two collections: V8 sweeps dead array buffers' memory concurrently after a collection and
  // updates `arrayBuffers` later; the second collection finishes the first one's sweep, so the
  // reading counts only what the build still holds (one collection read 30 MB too much, at times).
  const live = () => {
    gc();
    gc();
    const usage = process.memoryUsage();
    return usage.heapUsed + usage.arrayBuffers;
  };
  /** After the earlier tests' buffers are gone: V8 frees array buffers' memory after the collection that drops them. */
  const settled = async () => {
    for (let i = 0; i < 3; i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return live();
  };

  for (const fixture of ['gguf/tiny-llama-kquants.gguf', 'gguf/tiny-llama-legacy-quantized.gguf', 'gguf/tiny-llama-kquants-f32.gguf', 'stories260K/stories260K.gguf']) {
    it(`bounds what building ${fixture} holds`, async () => {
      const bytes = new Uint8Array(readFileSync(join(REPO_ROOT, 'test/fixtures', fixture)));
      const footprint = ggufFootprint(await openGgufModel(bytesByteSource(bytes)), DEFAULT_GGUF_GRAPH_OPTIONS);
      const before = await settled();
      let peak = 0;
      const { files } = await ggufModelFiles(bytesByteSource(bytes), { name: fixture, onProgress: () => (peak = Math.max(peak, live() - before)) });
      peak = Math.max(peak, live() - before);
      expect(peak).toBeGreaterThan(0);
      expect(peak).toBeLessThan(footprint.buildBytes);
      const graphBytes = files.externalData![0]!.data.byteLength + files.onnx.byteLength;
      expect(graphBytes).toBeLessThan(footprint.graphWeightBytes * 1.05);
      console.log(`${fixture}: build held ${(peak / 2 ** 20).toFixed(1)} MiB at most (estimate ${(footprint.buildBytes / 2 ** 20).toFixed(1)}), graph weights ${(graphBytes / 2 ** 20).toFixed(2)} MiB (estimate ${(footprint.graphWeightBytes / 2 ** 20).toFixed(2)})`);
    }, 60_000);
  }
});
