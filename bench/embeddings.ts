/**
 * Embeddings per second for requests of 1, 8 and 64 inputs, medians of interleaved rounds:
 *
 * - our embedding engine against transformers.js's feature-extraction pipeline in the same
 *   Node process, on the same ONNX folder (same onnxruntime-node kernels underneath). Both
 *   sides pool and normalize as the folder says (the peer is told the same pooling);
 * - our server (`npm start` on the GGUF) against llama-server --embedding on the same GGUF
 *   file, both over HTTP (POST /v1/embeddings, the same inputs), one thread each;
 * - in headless Chromium, our in-page engine against transformers.js in a page, on the same
 *   ONNX folder, one WASM thread each (bench/embeddings-page.ts; skipped without Chromium).
 *
 * Each pair's vectors are checked equal (cosine ≥ 0.9999) before anything is timed.
 *
 *   npx tsx bench/embeddings.ts   or   BENCH_ONLY=embeddings npm run bench
 *   BENCH_RUNS rounds (default 5); BENCH_EMBEDDING_MODEL=<folder> (default
 *   test/fixtures/embeddings/bert-wordpiece); BENCH_EMBEDDING_GGUF=<file.gguf> (default
 *   test/fixtures/embeddings/gguf/qwen3-embedding-f32.gguf)
 *
 * Figures, not pass/fail; on a shared machine say "loaded" and compare the ratio.
 */
import { existsSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { env, pipeline } from '@huggingface/transformers';
import { createNodeEmbeddingEngine } from '../src/runtime/node/embedding-engine.js';
import { terminate } from './child-process.js';
import { startServer } from './http.js';
import { llamaServerBinary, startLlamaServer } from './peer.js';
import { cosine, formatTable, median } from './stats.js';
import { EMBEDDING_REQUEST_SIZES, textsOf } from './embedding-inputs.js';

const modelDir = resolve(process.env.BENCH_EMBEDDING_MODEL ?? 'test/fixtures/embeddings/bert-wordpiece');
const ggufPath = resolve(process.env.BENCH_EMBEDDING_GGUF ?? 'test/fixtures/embeddings/gguf/qwen3-embedding-f32.gguf');
const runs = Number(process.env.BENCH_RUNS ?? 5);


type Embed = (texts: string[]) => Promise<ArrayLike<number>[]>;

/** Rows of embeddings/s for each request size, ours and the peer's timed in alternation. */
async function rates(embedOurs: Embed, embedPeer: Embed, peerName: string): Promise<{ rows: Record<string, string | number>[]; worst: number }> {
  const check = textsOf(8);
  const [a, b] = [await embedOurs(check), await embedPeer(check)];
  const worst = Math.min(...a.map((vector, i) => cosine(vector, b[i]!)));
  if (!(worst >= 0.9999)) throw new Error(`ours and ${peerName} disagree (worst cosine ${worst}): no timing`);
  const rows: Record<string, string | number>[] = [];
  for (const size of EMBEDDING_REQUEST_SIZES) {
    const texts = textsOf(size);
    // Enough calls a round that each round takes a while at every size.
    const calls = Math.max(2, Math.round(256 / size));
    const time = async (embed: Embed) => {
      const start = performance.now();
      for (let i = 0; i < calls; i += 1) await embed(texts);
      return (calls * size) / ((performance.now() - start) / 1000);
    };
    await time(embedOurs);
    await time(embedPeer);
    const oursRates: number[] = [];
    const peerRates: number[] = [];
    for (let round = 0; round < runs; round += 1) {
      oursRates.push(await time(embedOurs));
      peerRates.push(await time(embedPeer));
    }
    const [o, p] = [median(oursRates), median(peerRates)];
    rows.push({ 'inputs a request': size, 'ours (embeddings/s)': Math.round(o), [`${peerName} (embeddings/s)`]: Math.round(p), 'ours ÷ peer': (o / p).toFixed(2) });
  }
  return { rows, worst };
}

async function postEmbeddings(url: string, texts: string[]): Promise<number[][]> {
  const response = await fetch(`${url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: texts, encoding_format: 'float' }) });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${await response.text()}`);
  const body = (await response.json()) as { data: Array<{ index: number; embedding: number[] }> };
  return body.data.sort((x, y) => x.index - y.index).map((item) => item.embedding);
}

/** Our server and llama-server --embedding on the same GGUF, over HTTP, one thread each. */
async function ggufSection(): Promise<void> {
  if (!existsSync(llamaServerBinary())) {
    console.log(`\n## Embeddings, GGUF: skipped: llama.cpp's server is not built at ${llamaServerBinary()} (run scripts/peer/build-llama-server.sh)`);
    return;
  }
  const ours = await startServer({ MODEL_DIR: ggufPath, INTRA_OP_NUM_THREADS: '1' });
  const peer = await startLlamaServer({ gguf: ggufPath, threads: 1, parallel: 8, slotContext: 256, extraArgs: ['--embedding', '-b', '2048', '-ub', '2048'] });
  try {
    const { rows, worst } = await rates((texts) => postEmbeddings(ours.url, texts), (texts) => postEmbeddings(peer.url, texts), 'llama-server');
    console.log(`\n## Embeddings over HTTP: ${basename(ggufPath)}, ours vs ${peer.label}, median of ${runs} interleaved rounds (load ${loadavg()[0]!.toFixed(1)}; worst cosine ${worst.toFixed(6)})\n`);
    console.log(formatTable(rows));
  } finally {
    await peer.stop();
    await terminate(ours.child);
  }
}

/** Ours and transformers.js on the same ONNX folder, in this process. */
async function onnxSection(): Promise<void> {
  const threads = 1;
  const ours = await createNodeEmbeddingEngine({
    modelDir,
    limits: { maxRunningSequences: 64, maxBatchedTokens: 8192, maxWaitingRequests: 64 },
    intraOpNumThreads: threads,
  });
  env.localModelPath = `${dirname(modelDir)}/`;
  env.allowRemoteModels = false;
  const peer = await pipeline('feature-extraction', basename(modelDir), { dtype: 'fp32', session_options: { intraOpNumThreads: threads } } as never);
  const pooling = ours.pooling.mode === 'last' ? 'last_token' : ours.pooling.mode;
  const embedOurs = async (texts: string[]) => ours.embed({ inputs: texts.map((text) => ours.tokenizer.encode(text)) });
  const embedPeer = async (texts: string[]) => ((await peer(texts, { pooling: pooling as 'mean', normalize: ours.pooling.normalize })).tolist() as number[][]);

  const { rows, worst } = await rates(embedOurs, embedPeer, 'transformers.js');
  console.log(`\n## Embeddings in this process: ${basename(modelDir)}, ours vs transformers.js, ${threads} intra-op thread each, median of ${runs} interleaved rounds (load ${loadavg()[0]!.toFixed(1)}; worst cosine ${worst.toFixed(6)})\n`);
  console.log(formatTable(rows));
  await ours.dispose();
  await peer.dispose();
}

/** The page half (bench/embeddings-page.ts), when Chromium is there. */
async function pageSection(): Promise<void> {
  const { CHROMIUM_PATH } = await import('../scripts/chromium.js');
  if (!existsSync(CHROMIUM_PATH)) {
    console.log(`\n## Embeddings in the page: skipped: no Chromium at ${CHROMIUM_PATH}`);
    return;
  }
  const { embeddingsPageSection } = await import('./embeddings-page.js');
  await embeddingsPageSection({ modelDir, runs });
}

export async function embeddingsSection(): Promise<void> {
  await onnxSection();
  await ggufSection();
  await pageSection();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) await embeddingsSection();
