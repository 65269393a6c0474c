/**
 * What bounds the 135M fp32 rows of the homes table (issue #28): one decode step of the
 * bench's 135M-shaped fp32 model, every side measured once per round in a rotating order
 * (so a slow phase of a shared machine hits all of them), medians over rounds:
 *
 * - `read`: the machine's streaming-read bandwidth at 1 and 2 threads (bench/fp32-bound/
 *   stream-read.c, compiled once with cc into the bench cache), over as many bytes as one
 *   step's weights; a step's floor = weight bytes ÷ that bandwidth, measured in the same round.
 * - `ours`: our in-place graph (what the Node server runs) in this process, one `run()` per
 *   step at 1 thread, 2 threads without spinning (the engine's setting) and 2 threads spinning
 *   (onnxruntime's default): wall and process CPU time per step.
 * - `chain`: the step's 121 weight MatMuls alone (bench/fp32-bound/matmul-chain.ts), same
 *   bytes, at 1 and 2 threads: what the rest of the step (norms, attention, KV) adds.
 * - `prefill` (not by default): ROWS prompts of 16 tokens prefilled one run() each or in one.
 * - `tjs`: transformers.js 4.3.2 on the same folder with its defaults (model.onnx, onnxruntime's
 *   default threads and spinning): its session's bare `run()` per step, and `generate()` per
 *   token (generate(1 + N) − generate(1), ÷ N: what its loop adds around the run).
 * - `llama`: llama.cpp's server on the F32 GGUF (--threads 1 and 2): its own per-token decode
 *   time (/completion's timings.predicted_per_token_ms) and its process CPU per token
 *   (request of 1 + N tokens − request of 1 token, ÷ N).
 * - `engine` (not by default): our engine in this process without HTTP, model thread `auto`
 *   (the worker) and `main`: per token, to split the server's time outside the model call.
 * - `http`: our server (`npm start`'s build, default settings: worker thread, 2 threads) on
 *   the same folder, one streamed request: decode time per token over HTTP, and its process
 *   CPU per token (as llama's). Against `ours` 2 threads it gives the per-token time outside
 *   the model call.
 *
 * With FP32_ROWS=8 every side runs 8 rows per step: ours and tjs's bare runs at batch 8,
 * tjs's generate() on a batch of 8 prompts, llama-server with --parallel 8 and 8 concurrent
 * requests, our server with 8 concurrent streams (a step = decode time ÷ tokens per stream).
 *
 *   npx tsx bench/fp32-bound.ts
 *   FP32_ROUNDS=9 FP32_ROWS=1 FP32_TOKENS=16 FP32_SIDES=read,ours,chain,tjs,llama,http npx tsx bench/fp32-bound.ts
 *
 * FP32_EXTRA_GRAPH=path adds another graph with the same inputs at one thread (a variant to compare).
 *
 * Prints one Markdown table (and the load average before and after).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { AutoModelForCausalLM, env, Tensor as TjsTensor, type PreTrainedModel } from '@huggingface/transformers';
import { stepFeeds } from './fp32-bound/feeds.js';
import { ensureMatMulChain } from './fp32-bound/matmul-chain.js';
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { defaultSamplingParams } from '../src/sampling/params.js';
import { startServer, type ServerHandle } from './http.js';
import { streamTiming, type CompletionTarget } from './load-client.js';
import { startLlamaServer, type PeerHandle } from './peer.js';
import { benchModelCache, ensureBenchModel, SMOLLM2_135M_SHAPE } from './size-models.js';
import { randomPrompts } from './size.js';
import { median, percentile } from './stats.js';

const ROUNDS = Number(process.env.FP32_ROUNDS ?? 9);
const ROWS = Number(process.env.FP32_ROWS ?? 1);
/** Decode tokens per request (llama, tjs generate, http); ours' bare steps per round. */
const TOKENS = Number(process.env.FP32_TOKENS ?? 16);
/** Past slots of the bare runs: about where the requests' decode steps are (16-token prompts). */
const PAST = Number(process.env.FP32_PAST ?? 24);
const SIDES = new Set((process.env.FP32_SIDES ?? 'read,ours,chain,tjs,llama,http').split(','));
const PROMPT_TOKENS = 16;
/**
 * fp32 (default) or q4: with q4 the graph sides (ours, prefill, tjs, http) run the q4 graph
 * (model_q4.inplace.onnx; transformers.js dtype q4) and llama-server the Q4_0 GGUF; the
 * stream read and the chain stay fp32's, so their floor is not the q4 step's.
 */
const DTYPE = process.env.FP32_DTYPE === 'q4' ? 'q4' : 'fp32';

const { dim, hiddenDim, nLayers, nHeads, nKvHeads, vocabSize } = SMOLLM2_135M_SHAPE;
const headDim = dim / nHeads;
/** Bytes of weights one step reads: every layer's projections and the (tied) head, fp32. */
export const STEP_WEIGHT_BYTES = 4 * (nLayers * (2 * dim * dim + 2 * dim * nKvHeads * headDim + 3 * dim * hiddenDim) + vocabSize * dim);

interface Sample {
  wallMs: number;
  cpuMs?: number;
  /** Until every request's first token (the prompts' prefill), ms. */
  prefillMs?: number;
}

interface Side {
  label: string;
  /** One measurement: per step (ms) of wall and, where known, of CPU. */
  measure(round: number): Promise<Sample>;
  stop?(): Promise<void>;
}

function streamReadBinary(): string {
  const source = fileURLToPath(new URL('./fp32-bound/stream-read.c', import.meta.url));
  const dir = join(benchModelCache(), '..', 'stream-read');
  const binary = join(dir, 'stream-read-v2');
  if (!existsSync(binary)) {
    mkdirSync(dir, { recursive: true });
    const cc = spawnSync('cc', ['-O3', '-march=native', '-pthread', '-o', binary, source], { encoding: 'utf8' });
    if (cc.status !== 0) throw new Error(`cc stream-read.c failed: ${cc.stderr}`);
  }
  return binary;
}

function readSide(threads: number): Side {
  const binary = streamReadBinary();
  const mib = Math.round(STEP_WEIGHT_BYTES / 2 ** 20);
  return {
    label: `stream read, ${threads} thread${threads > 1 ? 's' : ''}: weight bytes ÷ GB/s`,
    async measure() {
      const run = spawnSync(binary, [String(mib), String(threads), '3'], { encoding: 'utf8' });
      const repeats = run.stdout.trim().split('\n').map((line) => line.split(' ').map(Number));
      const scale = STEP_WEIGHT_BYTES / 2 ** 20 / mib;
      return { wallMs: STEP_WEIGHT_BYTES / median(repeats.map((r) => r[3])) / 1e6, cpuMs: median(repeats.map((r) => r[4] * 1000 * scale)) };
    },
  };
}

/** `steps` runs back to back: the median wall and the mean process CPU per run. */
async function timeRuns(steps: number, run: () => Promise<unknown>): Promise<Sample> {
  const walls: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < steps; i++) {
    const started = performance.now();
    await run();
    walls.push(performance.now() - started);
  }
  const used = process.cpuUsage(cpu);
  return { wallMs: median(walls), cpuMs: (used.user + used.system) / 1000 / steps };
}

async function oursSide(path: string, threads: number, spinning: boolean, what = 'ours in-process'): Promise<Side> {
  const session = await ort.InferenceSession.create(path, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    ...(threads > 1 ? { extra: { session: { intra_op: { allow_spinning: spinning ? '1' : '0' } } } } : {}),
  });
  const feeds = stepFeeds(session.inputNames, ROWS, PAST);
  for (let i = 0; i < 3; i++) await session.run(feeds);
  return {
    label: `${what}, ${threads} thread${threads > 1 ? 's' : ''}${threads > 1 ? (spinning ? ', spinning' : ', no spinning') : ''} (run() per step)`,
    measure: () => timeRuns(Math.max(3, Math.round(TOKENS / 2)), () => session.run(feeds)),
    stop: () => session.release(),
  };
}

/**
 * `ROWS` prompts of PROMPT_TOKENS: prefilled one call each (as our scheduler did before
 * session 9's shared prefills) and in one call of ROWS rows (transformers.js's batch).
 */
async function prefillSides(path: string): Promise<Side[]> {
  const session = await ort.InferenceSession.create(path, {
    intraOpNumThreads: 2,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  });
  const one = stepFeeds(session.inputNames, 1, 0, PROMPT_TOKENS);
  const all = stepFeeds(session.inputNames, ROWS, 0, PROMPT_TOKENS);
  await session.run(one);
  await session.run(all);
  return [
    {
      label: `ours in-process, 2 threads: ${ROWS} prompts of ${PROMPT_TOKENS} tokens, one run() each (ms for all)`,
      measure: () => timeRuns(1, async () => {
        for (let i = 0; i < ROWS; i++) await session.run(one);
      }),
    },
    {
      label: `ours in-process, 2 threads: the same prompts in one ${ROWS}-row run() (ms for all)`,
      measure: () => timeRuns(1, () => session.run(all)),
      stop: () => session.release(),
    },
  ];
}

/** transformers.js's model on the same folder; two sides share it (its bare run, its generate). */
async function tjsSides(onnxDir: string, promptRange: [number, number]): Promise<Side[]> {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  const model: PreTrainedModel = await AutoModelForCausalLM.from_pretrained(onnxDir, { dtype: DTYPE, device: 'cpu' });
  const session = (model as unknown as { sessions: Record<string, ort.InferenceSession> }).sessions.model;
  const feeds = stepFeeds(session.inputNames, ROWS, PAST);
  const generate = async (prompts: number[][], tokens: number) => {
    const flat = BigInt64Array.from(prompts.flat(), (id) => BigInt(id));
    const dims = [prompts.length, prompts[0].length];
    await model.generate({
      input_ids: new TjsTensor('int64', flat, dims),
      attention_mask: new TjsTensor('int64', new BigInt64Array(flat.length).fill(1n), dims),
      max_new_tokens: tokens,
      min_new_tokens: tokens,
      do_sample: false,
    });
  };
  for (let i = 0; i < 2; i++) await session.run(feeds);
  await generate(randomPrompts(ROWS, PROMPT_TOKENS, promptRange, 3), 4);
  return [
    {
      label: 'transformers.js\'s session (model.onnx, its defaults), run() per step',
      measure: () => timeRuns(Math.max(3, Math.round(TOKENS / 2)), () => session.run(feeds)),
    },
    {
      label: 'transformers.js generate(), per token',
      async measure(round) {
        const prompts = randomPrompts(ROWS, PROMPT_TOKENS, promptRange, 100 + round);
        const one = await timeRuns(1, () => generate(prompts, 1));
        const many = await timeRuns(1, () => generate(prompts, 1 + TOKENS));
        return { wallMs: (many.wallMs - one.wallMs) / TOKENS, cpuMs: (many.cpuMs! - one.cpuMs!) / TOKENS };
      },
      stop: async () => void (await model.dispose()),
    },
  ];
}

function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks of 10 ms
}

async function llamaSide(gguf: string, threads: number, promptRange: [number, number]): Promise<Side> {
  const handle: PeerHandle = await startLlamaServer({ gguf, threads, parallel: ROWS, slotContext: 512 });
  const complete = async (prompt: number[], tokens: number) => {
    const response = await fetch(`${handle.url}/completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt, n_predict: tokens, temperature: 0, ignore_eos: true, cache_prompt: false }),
    });
    if (!response.ok) throw new Error(`llama-server: HTTP ${response.status}`);
    return ((await response.json()) as { timings: { predicted_per_token_ms: number; prompt_ms: number } }).timings;
  };
  const serverPid = await llamaPid(handle);
  await Promise.all(randomPrompts(ROWS, PROMPT_TOKENS, promptRange, 5).map((p) => complete(p, 4)));
  return {
    label: `llama.cpp server, --threads ${threads}${ROWS > 1 ? ` --parallel ${ROWS}` : ''} (its decode ms per token)`,
    async measure(round) {
      const prompts = randomPrompts(ROWS, PROMPT_TOKENS, promptRange, 200 + round);
      const cpu0 = cpuMsOf(serverPid);
      await Promise.all(prompts.map((p) => complete(p, 1)));
      const cpu1 = cpuMsOf(serverPid);
      const timings = await Promise.all(prompts.map((p) => complete([...p].reverse(), 1 + TOKENS)));
      const cpu2 = cpuMsOf(serverPid);
      return {
        wallMs: median(timings.map((t) => t.predicted_per_token_ms)),
        cpuMs: (cpu2 - cpu1 - (cpu1 - cpu0)) / TOKENS,
        prefillMs: Math.max(...timings.map((t) => t.prompt_ms)),
      };
    },
    stop: () => handle.stop(),
  };
}

/**
 * Our engine in this process without HTTP (createNodeEngine, greedy, EOS ignored), with the
 * model thread chosen by `auto` (the worker for this size) and on the main thread: its time per
 * token beside the bare run() is what the engine adds around the model call.
 */
async function engineSide(onnxDir: string, modelThread: 'auto' | 'main', promptRange: [number, number]): Promise<Side> {
  const engine = await createNodeEngine({ modelDir: onnxDir, dtype: DTYPE, modelThread, intraOpNumThreads: 'auto' });
  const generate = async (prompts: number[][], tokens: number) =>
    Promise.all(
      prompts.map(async (prompt) => {
        const params = defaultSamplingParams({ temperature: 0, maxTokens: tokens, ignoreEos: true });
        for await (const delta of engine.generate({ promptTokenIds: prompt, params })) void delta;
      }),
    );
  await generate(randomPrompts(ROWS, PROMPT_TOKENS, promptRange, 9), 8);
  return {
    label: `our engine in-process, no HTTP (model thread ${modelThread === 'auto' ? 'auto: worker' : 'main'}), per step`,
    async measure(round) {
      const prompts = randomPrompts(ROWS, PROMPT_TOKENS, promptRange, 400 + round);
      const one = await timeRuns(1, () => generate(prompts, 1));
      const many = await timeRuns(1, () => generate(prompts.map((p) => [...p].reverse()), 1 + TOKENS));
      return { wallMs: (many.wallMs - one.wallMs) / TOKENS, cpuMs: (many.cpuMs! - one.cpuMs!) / TOKENS };
    },
    stop: () => engine.dispose(),
  };
}

/** llama-server's pid: the newest llama-server process listening on the handle's port. */
async function llamaPid(handle: PeerHandle): Promise<number> {
  const port = new URL(handle.url).port;
  const ss = spawnSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' });
  const pid = Number(/pid=(\d+)/.exec(ss.stdout)?.[1] ?? NaN);
  if (!Number.isFinite(pid)) throw new Error(`no pid for llama-server on port ${port}: ${ss.stdout}${ss.stderr}`);
  return pid;
}

async function httpSide(onnxDir: string, promptRange: [number, number]): Promise<Side> {
  const server: ServerHandle = await startServer({ MODEL_DIR: onnxDir, MODEL_DTYPE: DTYPE, SERVED_MODEL_NAME: 'bench' });
  const target: CompletionTarget = { label: 'ours', url: server.url, model: 'bench', keepAlive: true };
  const pid = server.child.pid!;
  await Promise.all(randomPrompts(ROWS, PROMPT_TOKENS, promptRange, 7).map((p) => streamTiming(target, p, 8)));
  return {
    label: `our server over HTTP (npm start, defaults)${ROWS > 1 ? `, ${ROWS} streams` : ''}, decode per step`,
    async measure(round) {
      const prompts = randomPrompts(ROWS, PROMPT_TOKENS, promptRange, 300 + round);
      const cpu0 = cpuMsOf(pid);
      await Promise.all(prompts.map((p) => streamTiming(target, p, 1)));
      const cpu1 = cpuMsOf(pid);
      const started = performance.now();
      const timings = await Promise.all(prompts.map((p) => streamTiming(target, [...p].reverse(), 1 + TOKENS)));
      const cpu2 = cpuMsOf(pid);
      // From the last stream's first token to the end, ÷ the tokens after it: a step of the full
      // batch when the prompts were prefilled quickly; streams that started well before the last
      // one may have finished by then (then it is a smaller batch's step: read the prefill column).
      const firstTokenAt = Math.max(...timings.map((t) => t.ttftMs));
      const wallMs = (performance.now() - started - firstTokenAt) / TOKENS;
      return { wallMs, cpuMs: (cpu2 - cpu1 - (cpu1 - cpu0)) / TOKENS, prefillMs: firstTokenAt };
    },
    stop: () => server.stop(),
  };
}

async function main() {
  const files = await ensureBenchModel();
  const inplace = join(files.onnxDir, 'onnx', DTYPE === 'q4' ? 'model_q4.inplace.onnx' : 'model.inplace.onnx');
  const range = files.promptTokenRange;
  const sides: Side[] = [];
  try {
    if (SIDES.has('read')) sides.push(readSide(1), readSide(2));
    if (SIDES.has('ours')) sides.push(await oursSide(inplace, 1, false), await oursSide(inplace, 2, false), await oursSide(inplace, 2, true));
    // FP32_EXTRA_GRAPH=path: another graph of the same inputs beside ours at one thread (a variant, an older format).
    if (process.env.FP32_EXTRA_GRAPH) sides.push(await oursSide(process.env.FP32_EXTRA_GRAPH, 1, false, `${process.env.FP32_EXTRA_GRAPH} in-process`));
    if (SIDES.has('chain')) {
      const chain = ensureMatMulChain();
      const what = 'the 121 weight MatMuls alone (matmul-chain.ts)';
      sides.push(await oursSide(chain, 1, false, what), await oursSide(chain, 2, false, what));
    }
    if (SIDES.has('prefill')) sides.push(...(await prefillSides(inplace)));
    if (SIDES.has('tjs')) sides.push(...(await tjsSides(files.onnxDir, range)));
    if (SIDES.has('llama')) for (const threads of [1, 2]) sides.push(await llamaSide(DTYPE === 'q4' ? files.gguf.Q4_0 : files.gguf.F32, threads, range));
    if (SIDES.has('engine')) sides.push(await engineSide(files.onnxDir, 'auto', range), await engineSide(files.onnxDir, 'main', range));
    if (SIDES.has('http')) sides.push(await httpSide(files.onnxDir, range));
    const samples = sides.map(() => [] as Sample[]);
    const loadBefore = loadavg();
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < sides.length; k++) {
        const i = (k + round) % sides.length;
        // A spinning pool's threads spin on for a moment after a run: let them stop first.
        await new Promise((resolve) => setTimeout(resolve, 30));
        samples[i].push(await sides[i].measure(round));
      }
      console.error(`round ${round + 1}/${ROUNDS} (load ${loadavg()[0].toFixed(1)})`);
    }
    const loadAfter = loadavg();
    // The floor of each round: the weights at the better of the two read bandwidths measured in it.
    const floors = SIDES.has('read') ? samples[0].map((s, round) => Math.min(s.wallMs, samples[1][round].wallMs)) : null;
    console.log(
      `\n135M-shaped ${DTYPE}, ${ROWS} row${ROWS > 1 ? 's' : ''} a step, past ${PAST}, ${ROUNDS} rounds (medians); ${TOKENS} decode tokens per request; ` +
        `fp32 weights ${(STEP_WEIGHT_BYTES / 1e6).toFixed(1)} MB a step; ${cpus().length} cores (${cpus()[0]?.model}); ` +
        `load average ${loadBefore.map((x) => x.toFixed(1)).join(' / ')} before, ${loadAfter.map((x) => x.toFixed(1)).join(' / ')} after\n`,
    );
    // The engine's own configuration in this process: what the HTTP server's step is compared with.
    const engineIndex = sides.findIndex((side) => side.label.startsWith('ours in-process, 2 threads, no spinning'));
    console.log(
      '| side | ms per step, median (p10) | CPU ms per step | weight GB/s (median wall) | ÷ read floor, paired | ÷ ours 2 threads in-process, paired (wall / CPU) | prefill ms (first tokens) |',
    );
    console.log('| --- | --- | --- | --- | --- | --- | --- |');
    sides.forEach((side, i) => {
      const walls = samples[i].map((s) => s.wallMs);
      const wall = median(walls);
      const column = (pick: (s: Sample) => number | undefined) =>
        samples[i].every((s) => pick(s) !== undefined) ? median(samples[i].map((s) => pick(s)!)).toFixed(1) : '–';
      const paired = floors ? median(samples[i].map((s, round) => s.wallMs / floors[round])).toFixed(2) : '–';
      const engine = engineIndex >= 0 ? samples[engineIndex] : null;
      const toEngine = engine
        ? `${median(samples[i].map((s, round) => s.wallMs / engine[round].wallMs)).toFixed(2)} / ` +
          (samples[i][0].cpuMs === undefined ? '–' : median(samples[i].map((s, round) => s.cpuMs! / engine[round].cpuMs!)).toFixed(2))
        : '–';
      console.log(
        `| ${side.label} | ${wall.toFixed(1)} (${percentile(walls, 10).toFixed(1)}) | ${column((s) => s.cpuMs)} | ${(STEP_WEIGHT_BYTES / wall / 1e6).toFixed(1)} | ${paired} | ${toEngine} | ${column((s) => s.prefillMs)} |`,
      );
    });
  } finally {
    for (const side of sides) await side.stop?.();
  }
}

await main();
