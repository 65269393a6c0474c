/**
 * The bench's model-size axis, side by side with llama.cpp's server on the same weights and
 * vocabulary in the same run: the 135M-shaped model (fp32 / F32 and q4 / Q4_0) and the
 * embedded stories260K. Rounds are interleaved (every server runs its figures once per round,
 * in a rotating order) and figures are medians over rounds, so a slow phase of this shared
 * machine hits every side. For llama.cpp, each figure takes its best thread setting (1 or 2).
 */
import { cpus, loadavg, tmpdir } from 'node:os';
import { readFile } from 'node:fs/promises';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { openGgufModelAt } from '../src/gguf/node-gguf.js';
import type { GgufModel } from '../src/gguf/gguf-model.js';
import { fileURLToPath } from 'node:url';
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { defaultSamplingParams } from '../src/sampling/params.js';
import { readLlama2cCheckpoint } from '../src/convert/llama2c-checkpoint.js';
import { convertLlama2cModel, writeConvertedFiles } from '../src/convert/convert-llama2c-model.js';
import { buildLlamaGguf } from '../scripts/convert/llama-gguf.js';
import { writeGgufFile } from '../scripts/convert/gguf-writer.js';
import { seededRandom } from '../scripts/seeded-random.js';
import { startServer } from './http.js';
import {
  aggregateTokensPerSecond,
  completionTokensPerSecond,
  decodeTokensPerSecond,
  streamTiming,
  type CompletionTarget,
} from './load-client.js';
import { peerGreedyTokens, startLlamaServer, type PeerConfig, type PeerHandle } from './peer.js';
import { benchModelCache, ensureBenchModel } from './size-models.js';
import { median } from './stats.js';
import { benchModelWanted, warmUp } from './warm-up.js';

export interface SizeBenchOptions {
  rounds: number;
  maxTokens: number;
  /** Streams of the concurrency figures on the 135M model. */
  streams: number[];
  /** Prompt length of the TTFT figure. */
  ttftPromptTokens: number;
  log?: (line: string) => void;
}

/** One server's figures, medians over rounds. */
export interface ServerFigures {
  label: string;
  singleTokPerSec: number;
  ttftMs: number;
  decodeTokPerSec: number;
  /** streams → aggregate tok/s */
  streams: Record<number, number>;
  peakRssMiB: number;
}

export interface GreedyCheck {
  prompts: number;
  tokensPerPrompt: number;
  /** Per prompt: how many leading tokens both engines agree on. */
  agreeingPrefix: number[];
}

export interface ModelRow {
  model: string;
  dtype: string;
  ours: ServerFigures;
  /** Every llama.cpp configuration measured. */
  peers: ServerFigures[];
  /** Per figure, llama.cpp's best configuration. */
  peerBest: ServerFigures;
  greedy: GreedyCheck;
}

export interface SizeResults {
  /** Greedy agreement of stories260K's q4 graph and its Q4_0 GGUF (no throughput figures); absent with BENCH_GGUF. */
  storiesQ4Greedy?: GreedyCheck;
  peer: string;
  machine: string;
  loadAverage: { before: number[]; after: number[] };
  maxTokens: number;
  ttftPromptTokens: number;
  rounds: number;
  rows: ModelRow[];
}

const PROMPT_TOKENS = 16;

export function randomPrompts(count: number, length: number, range: [number, number], seed: number): number[][] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () =>
    Array.from({ length }, () => range[0] + Math.floor(random() * (range[1] - range[0]))),
  );
}

interface RunningServer {
  target: CompletionTarget;
  peakRssMiB(): number;
  stop(): Promise<void>;
}

async function startOurs(modelDir: string, dtype: string, label: string): Promise<RunningServer> {
  // A .gguf is served as it is (MODEL_DIR=file.gguf): its graph is built from the file, no dtype to pick.
  const server = await startServer({ MODEL_DIR: modelDir, ...(dtype === 'gguf' ? {} : { MODEL_DTYPE: dtype }), SERVED_MODEL_NAME: 'bench', CONFIG: benchServerConfig() });
  return { target: { label, url: server.url, model: 'bench', keepAlive: true }, peakRssMiB: server.peakRssMiB, stop: server.stop };
}

/**
 * Our server's config file for the bench: the defaults, but a queue deadline of 10 minutes.
 * On a loaded 2-core machine 32 streams' prefills can keep the last requests queued past the
 * default 30 s, and a 503 would end the run instead of giving its throughput figure.
 */
function benchServerConfig(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'bench-config-')), 'config.json');
  writeFileSync(path, JSON.stringify({ waitingDeadlineMs: 600_000 }));
  return path;
}

async function startPeer(config: PeerConfig): Promise<RunningServer & { handle: PeerHandle }> {
  const handle = await startLlamaServer(config);
  return {
    handle,
    target: { label: handle.label, url: handle.url, model: 'bench', keepAlive: false, extraBody: { cache_prompt: false } },
    peakRssMiB: handle.peakRssMiB,
    stop: handle.stop,
  };
}

type Measure = 'single' | 'ttft' | `streams:${number}`;

/**
 * Runs `measures` on every server, `rounds` times, rotating the order per round. Each
 * request gets prompts of its own (seeded by round), so no server can answer from a
 * prompt cache.
 */
async function interleaved(
  servers: RunningServer[],
  measuresOf: (server: RunningServer) => Measure[],
  options: SizeBenchOptions,
  promptRange: [number, number],
): Promise<ServerFigures[]> {
  const samples = servers.map(() => ({ single: [] as number[], ttft: [] as number[], decode: [] as number[], streams: new Map<number, number[]>() }));
  const { maxTokens } = options;
  for (let round = 0; round < options.rounds; round++) {
    for (let k = 0; k < servers.length; k++) {
      const index = (k + round) % servers.length;
      const server = servers[index];
      const s = samples[index];
      for (const measure of measuresOf(server)) {
        const seed = 1000 * round + measure.length;
        if (measure === 'single') {
          s.single.push(await completionTokensPerSecond(server.target, randomPrompts(1, PROMPT_TOKENS, promptRange, seed)[0], maxTokens));
        } else if (measure === 'ttft') {
          const timing = await streamTiming(server.target, randomPrompts(1, options.ttftPromptTokens, promptRange, seed + 1)[0], maxTokens);
          s.ttft.push(timing.ttftMs);
          s.decode.push(decodeTokensPerSecond(timing, maxTokens));
        } else {
          const count = Number(measure.slice('streams:'.length));
          const value = await aggregateTokensPerSecond(server.target, randomPrompts(count, PROMPT_TOKENS, promptRange, seed + count), maxTokens);
          s.streams.set(count, [...(s.streams.get(count) ?? []), value]);
        }
      }
      options.log?.(`  round ${round + 1}/${options.rounds}: ${server.target.label} done (load ${loadavg()[0].toFixed(2)})`);
    }
  }
  return servers.map((server, i) => ({
    label: server.target.label,
    singleTokPerSec: samples[i].single.length ? median(samples[i].single) : NaN,
    ttftMs: samples[i].ttft.length ? median(samples[i].ttft) : NaN,
    decodeTokPerSec: samples[i].decode.length ? median(samples[i].decode) : NaN,
    streams: Object.fromEntries([...samples[i].streams].map(([count, values]) => [count, median(values)])),
    peakRssMiB: server.peakRssMiB(),
  }));
}

/** Per figure, the best llama.cpp configuration (highest tok/s, lowest TTFT; RSS of the lightest). */
function bestOf(peers: ServerFigures[]): ServerFigures {
  const finite = (values: number[]) => values.filter(Number.isFinite);
  const max = (pick: (f: ServerFigures) => number) => Math.max(...finite(peers.map(pick)));
  const counts = [...new Set(peers.flatMap((p) => Object.keys(p.streams).map(Number)))];
  return {
    label: 'llama.cpp, best configuration per figure',
    singleTokPerSec: max((p) => p.singleTokPerSec),
    ttftMs: Math.min(...finite(peers.map((p) => p.ttftMs))),
    decodeTokPerSec: max((p) => p.decodeTokPerSec),
    streams: Object.fromEntries(counts.map((c) => [c, max((p) => p.streams[c] ?? NaN)])),
    peakRssMiB: Math.min(...finite(peers.map((p) => p.peakRssMiB))),
  };
}

/** Greedy ids from our engine (in this process) and llama.cpp's server, prompt by prompt. */
async function greedyCheck(modelDir: string, dtype: string, peerUrl: string, prompts: number[][], tokens: number): Promise<GreedyCheck> {
  const engine = await createNodeEngine({ modelDir, ...(dtype === 'gguf' ? {} : { dtype: dtype as 'fp32' }) });
  const agreeingPrefix: number[] = [];
  try {
    for (const prompt of prompts) {
      const ours: number[] = [];
      const params = defaultSamplingParams({ temperature: 0, maxTokens: tokens, ignoreEos: true });
      for await (const delta of engine.generate({ promptTokenIds: prompt, params })) ours.push(...delta.tokenIds);
      const theirs = await peerGreedyTokens(peerUrl, prompt, tokens);
      let same = 0;
      while (same < tokens && ours[same] === theirs[same]) same++;
      agreeingPrefix.push(same);
    }
  } finally {
    await engine.dispose();
  }
  return { prompts: prompts.length, tokensPerPrompt: tokens, agreeingPrefix };
}

async function stopAll(servers: RunningServer[]): Promise<void> {
  await Promise.all(servers.map((s) => s.stop()));
}

async function modelRow(
  model: string,
  dtype: string,
  onnxDir: string,
  gguf: string,
  peerConfigs: Array<{ threads: number; parallel: number; measures: Measure[] }>,
  ourMeasures: Measure[],
  slotContext: number,
  promptRange: [number, number],
  options: SizeBenchOptions,
): Promise<ModelRow> {
  const log = options.log ?? (() => {});
  log(`\n${model}, ${dtype}: starting this project's server and ${peerConfigs.length} llama.cpp servers`);
  const ours = await startOurs(onnxDir, dtype, `this project (${dtype})`);
  const peers: Array<RunningServer & { handle: PeerHandle }> = [];
  try {
    for (const config of peerConfigs) peers.push(await startPeer({ gguf, threads: config.threads, parallel: config.parallel, slotContext }));
    const greedy = await greedyCheck(onnxDir, dtype, peers[0].handle.url, randomPrompts(4, PROMPT_TOKENS, promptRange, 7), 32);
    log(`  greedy ids, ours vs llama.cpp, 4 prompts × 32 tokens: agreeing prefixes ${greedy.agreeingPrefix.join(', ')}`);
    // Warm-up: first touch of weights and KV (a batch), then the JIT (bench/warm-up.ts), on every server.
    for (const server of [ours, ...peers]) {
      await aggregateTokensPerSecond(server.target, randomPrompts(4, PROMPT_TOKENS, promptRange, 3), 8);
      await warmUp((tokens, index) => completionTokensPerSecond(server.target, randomPrompts(1, PROMPT_TOKENS, promptRange, 500 + index)[0], tokens));
    }
    const servers: RunningServer[] = [ours, ...peers];
    const measuresOf = (server: RunningServer) =>
      server === ours ? ourMeasures : peerConfigs[peers.findIndex((p) => p === server)].measures;
    const [oursFigures, ...peerFigures] = await interleaved(servers, measuresOf, options, promptRange);
    return { model, dtype, ours: oursFigures, peers: peerFigures, peerBest: bestOf(peerFigures), greedy };
  } finally {
    await stopAll([ours, ...peers]);
  }
}

function storiesSourceDir(): string {
  return fileURLToPath(new URL('../test/fixtures/stories260K/', import.meta.url));
}

/** stories260K's GGUF from the same checkpoint and tokenizer the embedded ONNX model was converted from. */
export async function stories260kGguf(weights: 'F32' | 'Q4_0'): Promise<string> {
  const dir = storiesSourceDir();
  const out = join(benchModelCache(), `stories260k-${weights.toLowerCase()}-v1.gguf`);
  if (!existsSync(out)) {
    mkdirSync(benchModelCache(), { recursive: true });
    const ckpt = readLlama2cCheckpoint(await readFile(join(dir, 'stories260K.bin')));
    writeGgufFile(out, buildLlamaGguf(ckpt, await readFile(join(dir, 'tok512.bin')), { weights, name: 'stories260K', contextLength: 512 }));
  }
  return out;
}

/**
 * Q4_0 on a trained model, whose greedy text is not one repeated token: our `--dtype q4`
 * graph of stories260K against llama.cpp on its Q4_0 GGUF.
 */
export async function stories260kQ4Greedy(): Promise<GreedyCheck> {
  const dir = storiesSourceDir();
  const onnxDir = join(benchModelCache(), 'stories260k-q4-v3');
  if (!existsSync(join(onnxDir, 'onnx', 'model_q4.onnx'))) {
    const files = convertLlama2cModel(await readFile(join(dir, 'stories260K.bin')), await readFile(join(dir, 'tok512.bin')), { dtypes: ['q4'] });
    await writeConvertedFiles(onnxDir, files);
  }
  const peer = await startLlamaServer({ gguf: await stories260kGguf('Q4_0'), threads: 1, parallel: 1, slotContext: 512 });
  try {
    return await greedyCheck(onnxDir, 'q4', peer.url, randomPrompts(4, 4, [259, 512], 11).map((p) => [1, ...p]), 64);
  } finally {
    await peer.stop();
  }
}

/**
 * Prompt ids for a GGUF's vocabulary: the longest run of normal tokens (token_type 1), so no
 * control or byte token lands in a random prompt.
 */
function normalTokenRange(model: GgufModel): [number, number] {
  const types = (model.file.metadata.get('tokenizer.ggml.token_type') as number[] | undefined) ?? [];
  const size = (model.file.metadata.get('tokenizer.ggml.tokens') as string[]).length;
  if (types.length === 0) return [0, size];
  let best: [number, number] = [0, 0];
  for (let start = 0; start < types.length; ) {
    let end = start;
    while (end < types.length && Number(types[end]) === 1) end++;
    if (end - start > best[1] - best[0]) best = [start, end];
    start = end + 1;
  }
  return best;
}

/**
 * BENCH_GGUF=path: the size section on that one file, served by this project's server
 * (MODEL_DIR=file.gguf) and by llama-server, with the 135M row's rounds and figures.
 */
async function benchOneGguf(gguf: string, options: SizeBenchOptions, peerVersion: string): Promise<SizeResults> {
  const before = loadavg();
  const all: Measure[] = ['single', 'ttft', ...options.streams.map((n) => `streams:${n}` as Measure)];
  const maxStreams = Math.max(...options.streams);
  const model = await openGgufModelAt(gguf);
  const slotContext = Math.min(512, model.shape.contextLength);
  const row = await modelRow(basename(gguf), 'gguf', gguf, gguf, [1, 2].map((threads) => ({ threads, parallel: maxStreams, measures: all })), all, slotContext, normalTokenRange(model), {
    ...options,
    ttftPromptTokens: Math.min(options.ttftPromptTokens, Math.floor(slotContext / 2)),
  });
  return {
    peer: `llama.cpp's llama-server (${peerVersion}), built from node-llama-cpp's bundled sources against its prebuilt libraries`,
    machine: `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'})`,
    loadAverage: { before, after: loadavg() },
    maxTokens: options.maxTokens,
    ttftPromptTokens: Math.min(options.ttftPromptTokens, Math.floor(slotContext / 2)),
    rounds: options.rounds,
    rows: [row],
  };
}

export async function benchSizes(options: SizeBenchOptions, peerVersion: string): Promise<SizeResults> {
  if (process.env.BENCH_GGUF) return benchOneGguf(process.env.BENCH_GGUF, options, peerVersion);
  const before = loadavg();
  const model = benchModelWanted('135m-fp32') || benchModelWanted('135m-q4') ? await ensureBenchModel(options.log) : null;
  const rows: ModelRow[] = [];
  const all: Measure[] = ['single', 'ttft', ...options.streams.map((n) => `streams:${n}` as Measure)];
  const slotContext = 512;
  const maxStreams = Math.max(...options.streams);
  for (const [dtype, weights] of [['fp32', 'F32'], ['q4', 'Q4_0']] as const) {
    if (model === null || !benchModelWanted(dtype === 'fp32' ? '135m-fp32' : '135m-q4')) continue;
    rows.push(
      await modelRow(
        '135M-shaped (SmolLM2 shape)',
        dtype,
        model.onnxDir,
        model.gguf[weights],
        // One request and TTFT on --parallel 1, the streams on --parallel <most streams>, each at 1
        // and 2 threads: llama.cpp's best config per figure (on --parallel 32 its one-request rate
        // fell below its own decode rate in session 10's full run).
        [1, 2].flatMap((threads) => [
          { threads, parallel: 1, measures: ['single', 'ttft'] as Measure[] },
          { threads, parallel: maxStreams, measures: all.filter((measure) => measure.startsWith('streams:')) },
        ]),
        all,
        slotContext,
        model.promptTokenRange,
        options,
      ),
    );
  }
  // stories260K: one request on --parallel 1, 64 streams on --parallel 64 (the best configs
  // of each, per the peer notes), each at 1 and 2 threads.
  let storiesQ4: GreedyCheck | undefined;
  if (benchModelWanted('stories260k')) {
    const embedded = fileURLToPath(new URL('../models/stories260k/', import.meta.url));
    const storiesGguf = await stories260kGguf('F32');
    const configs = [1, 2].flatMap((threads) => [
      { threads, parallel: 1, measures: ['single'] as Measure[] },
      { threads, parallel: 64, measures: ['streams:64'] as Measure[] },
    ]);
    rows.push(
      await modelRow('stories260K (embedded)', 'fp32', embedded, storiesGguf, configs, ['single', 'streams:64'], 512, [259, 512], {
        ...options,
        rounds: Math.max(options.rounds, 3),
      }),
    );
    storiesQ4 = await stories260kQ4Greedy();
    options.log?.(`stories260K q4 / Q4_0: greedy ids agree for the first ${storiesQ4.agreeingPrefix.join(', ')} of ${storiesQ4.tokensPerPrompt} tokens`);
  }
  return {
    storiesQ4Greedy: storiesQ4,
    peer: `llama.cpp's llama-server (${peerVersion}), built from node-llama-cpp's bundled sources against its prebuilt libraries`,
    machine: `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'})`,
    loadAverage: { before, after: loadavg() },
    maxTokens: options.maxTokens,
    ttftPromptTokens: options.ttftPromptTokens,
    rounds: options.rounds,
    rows,
  };
}

const ratio = (ours: number, peer: number) => (Number.isFinite(ours) && Number.isFinite(peer) && peer > 0 ? (ours / peer).toFixed(2) : '–');
const num = (v: number, digits = 0) => (Number.isFinite(v) ? v.toFixed(digits) : '–');

/** The side-by-side table (Markdown), one line per figure: what the README's performance section shows. */
export function sizeMarkdownTable(results: SizeResults): string {
  const lines = ['| model | figure | this project | llama.cpp (best config) | ratio |', '| --- | --- | --- | --- | --- |'];
  for (const row of results.rows) {
    const name = row.dtype === 'gguf' ? `${row.model} (the same GGUF on both sides)` : `${row.model}, ${row.dtype === 'q4' ? 'q4 / Q4_0' : 'fp32 / F32'}`;
    const add = (figure: string, ours: number, peer: number, unit: string, digits = 0) => {
      if (!Number.isFinite(ours) && !Number.isFinite(peer)) return;
      lines.push(`| ${name} | ${figure} | ${num(ours, digits)} ${unit} | ${num(peer, digits)} ${unit} | ${ratio(ours, peer)} |`);
    };
    add('one request', row.ours.singleTokPerSec, row.peerBest.singleTokPerSec, 'tok/s');
    add(`one stream, TTFT (${results.ttftPromptTokens}-token prompt)`, row.ours.ttftMs, row.peerBest.ttftMs, 'ms', 1);
    add('one stream, decode', row.ours.decodeTokPerSec, row.peerBest.decodeTokPerSec, 'tok/s');
    for (const count of Object.keys(row.ours.streams).map(Number)) {
      add(`${count} streams, aggregate`, row.ours.streams[count], row.peerBest.streams[count], 'tok/s');
    }
    add('server peak RSS', row.ours.peakRssMiB, row.peerBest.peakRssMiB, 'MiB');
  }
  return lines.join('\n');
}

/** Greedy agreement and each llama.cpp configuration's own figures (the best-of above is per figure). */
export function peerDetailTable(results: SizeResults): string {
  const lines = ['| model | server | one request tok/s | TTFT ms | decode tok/s | streams: aggregate tok/s | peak RSS MiB |', '| --- | --- | --- | --- | --- | --- | --- |'];
  for (const row of results.rows) {
    for (const f of [row.ours, ...row.peers]) {
      const streams = Object.entries(f.streams).map(([c, v]) => `${c}: ${num(v)}`).join(', ') || '–';
      lines.push(`| ${row.model} ${row.dtype} | ${f.label} | ${num(f.singleTokPerSec)} | ${num(f.ttftMs, 1)} | ${num(f.decodeTokPerSec)} | ${streams} | ${num(f.peakRssMiB)} |`);
    }
  }
  return lines.join('\n');
}
