/**
 * Step time vs context length (issue 16): `rows` greedy streams decode together to the end
 * of a 512-token context; the median step time over the last 64 tokens against the first 64
 * shows what each step pays for the context behind it. A graph that rebuilds its KV cache
 * every step (Concat(past, new), the Hugging Face contract of the `fused` flavour) pays a
 * copy of the whole cache; the `inplace` flavour writes only the new slots.
 *
 * Models: the embedded one as Node serves it (its in-place twin, onnx/model.inplace.onnx), then the converter's `fused` and `inplace` graphs of
 * the same weights (the llama2.c checkpoint in test/fixtures/stories260K/ when present, else seeded random
 * weights of its shape) and of a larger seeded random-weight model. Built into a temporary
 * folder, never committed. Flavours are measured in alternation, medians over the rounds.
 *
 * The bound: llama.cpp's server on the same weights as F32 GGUF (written here with the same
 * tokenizer), the same rows and context, timed from its streamed tokens
 * (step-growth-peer.ts), its rounds alternating with ours; when llama-server is built and
 * stories260K's checkpoint and tokenizer are in test/fixtures/stories260K/ (the trained model only: a
 * random-weight model's streams fail on llama-server). With `-fa off` (STEP_GROWTH_PEER_ARGS): its default, flash
 * attention auto (on for CPU), grew 18× here (14.6 → 268 ms a step at 32 rows, stories260K),
 * off 1.4×; its F16 KV cache as by default; STEP_GROWTH_PEER_THREADS threads (1: what our
 * `auto` gives these models here). Ratios alone flatter a slow step, so the table also shows
 * what each step gains over the context in milliseconds (last − first).
 *
 * Alone: STEP_GROWTH_ROUNDS (3), STEP_GROWTH_ROWS (32), STEP_GROWTH_PEER=0 to skip
 * llama.cpp; `BENCH_ONLY=step-growth npm run bench`.
 */
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createNodeEngine } from '../src/runtime/node/engine.js';
import type { LocalEngine } from '../src/engine/local-engine.js';
import { defaultSamplingParams } from '../src/sampling/params.js';
import { type DecoderCheckpoint } from '../src/graph/decoder-checkpoint.js';
import { readLlama2cCheckpoint } from '../src/convert/llama2c-checkpoint.js';
import { buildHfConfig, LLAMA2C_RMS_NORM_EPS } from '../src/convert/hf-config.js';
import { buildLlamaGraph, EXTRA_OPSETS, type GraphOps } from '../src/graph/llama-onnx-graph.js';
import { encodeOnnxModel } from '../src/graph/onnx-writer.js';
import { randomLlamaCheckpoint, type RandomCheckpointShape } from '../scripts/convert/random-checkpoint.js';
import { buildLlamaGguf } from '../scripts/convert/llama-gguf.js';
import { writeGgufFile } from '../scripts/convert/gguf-writer.js';
import { formatTable, median } from './stats.js';
import { llamaServerVersion } from './peer.js';
import { startPeerStepGrowth, type PeerStepGrowthRunner } from './step-growth-peer.js';

const EMBEDDED = fileURLToPath(new URL('../models/stories260k/', import.meta.url));
const CHECKPOINT = fileURLToPath(new URL('../test/fixtures/stories260K/stories260K.bin', import.meta.url));
const TOKENIZER = fileURLToPath(new URL('../test/fixtures/stories260K/tok512.bin', import.meta.url));
const STORIES_SHAPE: RandomCheckpointShape = { vocabSize: 512, dim: 64, hiddenDim: 172, nLayers: 5, nHeads: 8, nKvHeads: 4, seqLen: 512 };
/** ~10 M parameters: attention and MLP of a size where a step is mostly matrix work. */
const LARGER_SHAPE: RandomCheckpointShape = { vocabSize: 512, dim: 384, hiddenDim: 1024, nLayers: 6, nHeads: 6, nKvHeads: 2, seqLen: 512 };
const WINDOW = 64;
const CONTEXT = 512;

export interface StepGrowthResult {
  model: string;
  /** Our graph flavour, or the peer's configuration (llama.cpp ...). */
  flavour: string;
  rows: number;
  /** Median ms per step over the first / last WINDOW tokens, median over rounds. */
  firstMs: number;
  lastMs: number;
  ratio: number;
  rounds: Array<{ firstMs: number; lastMs: number }>;
}

/** One run: `rows` streams from BOS to the end of the context; step times from stream 0's token gaps. */
async function measure(engine: LocalEngine, rows: number): Promise<{ firstMs: number; lastMs: number }> {
  const prompt = [engine.spec.bosTokenId ?? 1];
  const maxTokens = engine.info.maxModelLen - prompt.length;
  const params = defaultSamplingParams({ temperature: 0, maxTokens, ignoreEos: true });
  const times: number[][] = Array.from({ length: rows }, () => []);
  await Promise.all(
    times.map(async (stamps) => {
      for await (const delta of engine.generate({ promptTokenIds: prompt, params })) {
        for (let i = 0; i < delta.tokenIds.length; i++) stamps.push(performance.now());
      }
    }),
  );
  // Each stream's gaps between tokens are steps of the whole batch; the median over streams per token.
  const gaps = (from: number, to: number) =>
    median(times.flatMap((stamps) => stamps.slice(from + 1, to).map((t, i) => t - stamps[from + i])));
  const length = times[0].length;
  return { firstMs: gaps(0, WINDOW + 1), lastMs: gaps(length - WINDOW - 1, length) };
}

async function modelFolder(root: string, name: string, ckpt: DecoderCheckpoint, ops: GraphOps): Promise<string> {
  const dir = join(root, `${name}-${ops}`);
  // The tokenizer and configs of the embedded folder; its graphs are replaced by the one built here.
  await cp(EMBEDDED, dir, { recursive: true, filter: (source) => !source.endsWith('.onnx') });
  const embedded = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown> & { rope_theta: number };
  const config = { ...embedded, ...buildHfConfig(ckpt, embedded.rope_theta) };
  await writeFile(join(dir, 'config.json'), JSON.stringify(config, null, 2));
  const graph = buildLlamaGraph(ckpt, { rmsNormEps: LLAMA2C_RMS_NORM_EPS, ops });
  const bytes = encodeOnnxModel({ irVersion: 8, opsetVersion: 17, producerName: 'bench', producerVersion: '0', graph, extraOpsets: EXTRA_OPSETS[ops] });
  await mkdir(join(dir, 'onnx'), { recursive: true });
  await writeFile(join(dir, 'onnx/model.onnx'), bytes);
  return dir;
}

/** One llama-server per model on the same weights, or none when it is not built or stories260K's tokenizer is missing. */
async function startPeers(
  root: string,
  models: ReadonlyArray<{ model: string; ckpt: DecoderCheckpoint }>,
  rows: number,
): Promise<Array<{ model: string; runner: PeerStepGrowthRunner }>> {
  if (process.env.STEP_GROWTH_PEER === '0' || llamaServerVersion() === null || !existsSync(TOKENIZER)) return [];
  const tokenizer = await readFile(TOKENIZER);
  const threads = Number(process.env.STEP_GROWTH_PEER_THREADS ?? 1);
  const extraArgs = (process.env.STEP_GROWTH_PEER_ARGS ?? '-fa off').split(' ').filter((arg) => arg !== '');
  const peers: Array<{ model: string; runner: PeerStepGrowthRunner }> = [];
  for (const [index, { model, ckpt }] of models.entries()) {
    const gguf = join(root, `peer-${index}.gguf`);
    writeGgufFile(gguf, buildLlamaGguf(ckpt, tokenizer, { weights: 'F32', name: model, contextLength: CONTEXT }));
    peers.push({ model, runner: await startPeerStepGrowth({ gguf, rows, threads, context: CONTEXT, window: WINDOW, extraArgs }) });
  }
  return peers;
}

export async function benchStepGrowth(options: { rounds: number; rows: number }): Promise<StepGrowthResult[]> {
  const root = await mkdtemp(join(tmpdir(), 'step-growth-'));
  try {
    const stories = existsSync(CHECKPOINT) ? readLlama2cCheckpoint(await readFile(CHECKPOINT)) : randomLlamaCheckpoint(STORIES_SHAPE, 260);
    const storiesName = existsSync(CHECKPOINT) ? 'stories260K' : 'stories260K-shaped (random)';
    const larger = randomLlamaCheckpoint(LARGER_SHAPE, 16);
    const largerName = 'random 10M (dim 384, 6 layers)';
    const models: Array<{ model: string; flavour: string; dir: string }> = [
      { model: 'embedded (as Node serves it)', flavour: 'shipped', dir: EMBEDDED },
    ];
    for (const ops of ['fused', 'inplace'] as const) models.push({ model: storiesName, flavour: ops, dir: await modelFolder(root, 'stories', stories, ops) });
    for (const ops of ['fused', 'inplace'] as const) models.push({ model: largerName, flavour: ops, dir: await modelFolder(root, 'larger', larger, ops) });
    const engines = await Promise.all(models.map(({ dir }) => createNodeEngine({ modelDir: dir, limits: { speculativeDecoding: 'off' } })));
    // stories260K only, the trained checkpoint: llama-server fails a random-weight model's
    // streams after a token or two ("output that does not match the expected Content-only format").
    const peerModels = existsSync(CHECKPOINT) ? [{ model: storiesName, ckpt: stories }] : [];
    const peers = await startPeers(root, peerModels, options.rows).catch(async (error) => {
      await Promise.all(engines.map((engine) => engine.dispose()));
      throw error;
    });
    try {
      const rounds = models.map(() => [] as Array<{ firstMs: number; lastMs: number }>);
      const peerRounds = peers.map(() => [] as Array<{ firstMs: number; lastMs: number }>);
      // Warm-up (JIT), then the models in turn each round, so a slow phase of the machine hits them alike.
      for (const engine of engines) await measure(engine, Math.min(options.rows, 8));
      for (let round = 0; round < options.rounds; round++) {
        for (let m = 0; m < models.length; m++) rounds[m].push(await measure(engines[m], options.rows));
        for (let p = 0; p < peers.length; p++) peerRounds[p].push(await peers[p].runner.measure());
      }
      const summary = (model: string, flavour: string, runs: Array<{ firstMs: number; lastMs: number }>): StepGrowthResult => {
        const firstMs = median(runs.map((r) => r.firstMs));
        const lastMs = median(runs.map((r) => r.lastMs));
        return { model, flavour, rows: options.rows, firstMs, lastMs, ratio: lastMs / firstMs, rounds: runs };
      };
      return [
        ...models.map(({ model, flavour }, m) => summary(model, flavour, rounds[m])),
        ...peers.map(({ model, runner }, p) => summary(model, runner.label, peerRounds[p])),
      ];
    } finally {
      await Promise.all([...engines.map((engine) => engine.dispose()), ...peers.map(({ runner }) => runner.stop())]);
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

export function stepGrowthTable(results: readonly StepGrowthResult[]): string {
  return formatTable(
    results.map((r) => ({
      model: r.model,
      graph: r.flavour,
      rows: r.rows,
      [`ms/step, first ${WINDOW}`]: r.firstMs.toFixed(2),
      [`ms/step, last ${WINDOW}`]: r.lastMs.toFixed(2),
      'last − first (ms)': (r.lastMs - r.firstMs).toFixed(2),
      'last / first': r.ratio.toFixed(2),
    })),
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const rounds = Number(process.env.STEP_GROWTH_ROUNDS ?? 3);
  const rows = Number(process.env.STEP_GROWTH_ROWS ?? 32);
  benchStepGrowth({ rounds, rows })
    .then((results) => console.log(stepGrowthTable(results)))
    .catch((error) => {
      console.error(error);
      process.exit(1);
    });
}
