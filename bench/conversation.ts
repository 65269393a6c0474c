/**
 * `BENCH_ONLY=conversation npm run bench`: serving conversations, this project's server
 * against llama.cpp's on the same weights, each with its prompt cache on (ours: prefix
 * caching; llama.cpp: cache_prompt), llama.cpp on its best configuration for each figure
 * (`--parallel 1` for one conversation, `--parallel 9` for the concurrent scenarios):
 *
 * - growing chat: a system prompt, then turns of a user message and a reply; each turn's
 *   prompt is the whole history. Time to first token per turn (turns 2.. summed, and the
 *   last), and a cold prompt of the same length as the last (nothing cached either side).
 *   Each turn's history holds the reply the server generated, as token ids (ours:
 *   vLLM's return_tokens_as_token_ids in logprobs; llama.cpp: /completion's return_tokens),
 *   so each server can reuse the KV of its own reply, as in a real chat.
 * - shared system prompt: 8 clients at once, one system prompt, different questions; time to
 *   first token (median, slowest) and the time until every answer is complete.
 * - long prompt arriving: 8 streams decoding, then one long prompt arrives; the 8 streams'
 *   inter-token latency, median, p99 and the longest gap, over the run (a single freeze of
 *   the 8 streams is only 8 of ~1000 gaps: p99 may miss it, the longest gap does not); ours
 *   also with chunked prefill off, for the same figures.
 *
 * BENCH_QUICK=1 (or no 135M-shaped model wanted): the embedded stories260K (512-token
 * context) with smaller sizes, F32 GGUF for llama.cpp, one round; otherwise the 135M-shaped
 * q4 model (bench/size-models.ts; built once, a few minutes) against its Q4_0 GGUF,
 * BENCH_ROUNDS (3) interleaved rounds, medians. Figures only: the machine's load is printed.
 */
import http from 'node:http';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { seededRandom } from '../scripts/seeded-random.js';
import { startServer } from './http.js';
import { postBody } from './load-client.js';
import { llamaServerBinary, llamaServerVersion, startLlamaServer } from './peer.js';
import { ensureBenchModel } from './size-models.js';
import { stories260kGguf } from './size.js';
import { formatTable, median } from './stats.js';

export interface Sizes {
  systemTokens: number;
  turns: number;
  userTokens: number;
  replyTokens: number;
  /** Shared system prompt: each client's question, and its answer's length. */
  questionTokens: number;
  answerTokens: number;
  /** Long prompt arriving: the running streams' length, and the arriving prompt's. */
  streamTokens: number;
  longPromptTokens: number;
}

const QUICK_SIZES: Sizes = { systemTokens: 128, turns: 4, userTokens: 32, replyTokens: 16, questionTokens: 16, answerTokens: 16, streamTokens: 64, longPromptTokens: 360 };
/** The figures (#38): a 256-token system prompt, 7 turns of 48 + 24 tokens, an 800-token prompt. */
export const FULL_SIZES: Sizes = { systemTokens: 256, turns: 8, userTokens: 48, replyTokens: 24, questionTokens: 24, answerTokens: 32, streamTokens: 128, longPromptTokens: 800 };

export interface Target {
  label: string;
  /** Which API returns a reply's token ids: ours (vLLM's) or llama.cpp's native /completion. */
  kind: 'ours' | 'llama.cpp';
  url: string;
  /** Sent with every request (llama.cpp: cache_prompt). */
  extraBody: Record<string, unknown>;
  agent: http.Agent;
}

interface Served {
  target: Target;
  stop(): Promise<void>;
}

interface StreamTimes {
  /** ms from sending to each chunk carrying a token. */
  tokenTimes: number[];
}

/** One streamed completion of `prompt` (token ids), greedy, EOS ignored: when each token arrived. */
export async function stream(target: Target, prompt: readonly number[], maxTokens: number, onToken?: (count: number) => void): Promise<StreamTimes> {
  const payload = JSON.stringify({ model: 'bench', prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true, ...target.extraBody });
  const start = performance.now();
  const tokenTimes: number[] = [];
  let pending = '';
  let tail = '';
  const status = await postBody(`${target.url}/v1/completions`, payload, target.agent, (chunk) => {
    tail = (tail + chunk).slice(-500);
    pending += chunk;
    const events = pending.split('\n\n');
    pending = events.pop() ?? '';
    const at = performance.now() - start;
    for (const event of events) {
      if (!event.includes('"choices":[{')) continue;
      tokenTimes.push(at);
      onToken?.(tokenTimes.length);
    }
  });
  if (status !== 200) throw new Error(`${target.label}: HTTP ${status}: ${tail}`);
  return { tokenTimes };
}

export const ttft = (times: StreamTimes) => times.tokenTimes[0] ?? NaN;

/** One streamed greedy reply to `prompt`: its time to first token and the token ids the server generated. */
async function streamReply(target: Target, prompt: readonly number[], maxTokens: number): Promise<{ ttftMs: number; ids: number[]; promptTimings?: PromptTimings }> {
  const ours = target.kind === 'ours';
  const payload = JSON.stringify(
    ours
      ? { model: 'bench', prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true, logprobs: 0, return_tokens_as_token_ids: true }
      : { prompt, n_predict: maxTokens, temperature: 0, ignore_eos: true, stream: true, return_tokens: true, cache_prompt: true },
  );
  const start = performance.now();
  let first = NaN;
  let promptTimings: PromptTimings | undefined;
  const ids: number[] = [];
  const finalIds: number[] = [];
  let pending = '';
  let tail = '';
  const status = await postBody(`${target.url}${ours ? '/v1/completions' : '/completion'}`, payload, target.agent, (chunk) => {
    tail = (tail + chunk).slice(-500);
    pending += chunk;
    const events = pending.split('\n\n');
    pending = events.pop() ?? '';
    for (const event of events) {
      const data = event.trim().replace(/^data: /, '');
      if (!data.startsWith('{')) continue;
      const parsed = JSON.parse(data) as { choices?: Array<{ logprobs?: { tokens?: string[] } }>; tokens?: number[]; stop?: boolean; timings?: { prompt_n: number; prompt_ms: number } };
      if (parsed.timings !== undefined) promptTimings = { promptN: parsed.timings.prompt_n, promptMs: parsed.timings.prompt_ms };
      const got = ours ? (parsed.choices?.[0]?.logprobs?.tokens ?? []).map((name) => Number(name.slice('token_id:'.length))) : (parsed.tokens ?? []);
      if (!ours && parsed.stop) {
        finalIds.push(...got);
        continue;
      }
      if (got.length > 0 && Number.isNaN(first)) first = performance.now() - start;
      ids.push(...got);
    }
  });
  if (status !== 200) throw new Error(`${target.label}: HTTP ${status}: ${tail}`);
  // llama.cpp's last event may carry every generated token instead.
  const reply = ids.length >= maxTokens || finalIds.length === 0 ? ids : finalIds;
  if (reply.length !== maxTokens) throw new Error(`${target.label}: ${reply.length} reply token ids, asked for ${maxTokens} with ignore_eos`);
  return { ttftMs: first, ids: reply, promptTimings };
}

/** llama.cpp's own account of a request's prompt (its response's `timings`): tokens prefilled and their time. */
export interface PromptTimings {
  promptN: number;
  promptMs: number;
}

/** Prompt ids drawn from `range` by a seeded generator: `seededPrompts(seed, range)(length)`. */
export function seededPrompts(seed: number, range: [number, number]) {
  const random = seededRandom(seed);
  return (length: number) => Array.from({ length }, () => range[0] + Math.floor(random() * (range[1] - range[0])));
}

export interface ChatFigures {
  /** Each turn's time to first token. */
  turnTtftsMs: number[];
  /** llama.cpp only: each turn's prompt timings as it reports them. */
  turnPromptTimings: Array<PromptTimings | undefined>;
  ttftTurnsAfterFirstMs: number;
  lastTurnTtftMs: number;
  coldTtftMs: number;
}

export async function growingChat(target: Target, sizes: Sizes, seed: number, range: [number, number]): Promise<ChatFigures> {
  const make = seededPrompts(seed, range);
  let history = make(sizes.systemTokens);
  const ttfts: number[] = [];
  const timings: Array<PromptTimings | undefined> = [];
  for (let turn = 0; turn < sizes.turns; turn++) {
    history = [...history, ...make(sizes.userTokens)];
    const reply = await streamReply(target, history, sizes.replyTokens);
    ttfts.push(reply.ttftMs);
    timings.push(reply.promptTimings);
    history = [...history, ...reply.ids];
  }
  const lastPromptLength = history.length - sizes.replyTokens;
  const cold = ttft(await stream(target, seededPrompts(seed + 1000, range)(lastPromptLength), 1));
  return { turnTtftsMs: ttfts, turnPromptTimings: timings, ttftTurnsAfterFirstMs: ttfts.slice(1).reduce((sum, value) => sum + value, 0), lastTurnTtftMs: ttfts.at(-1)!, coldTtftMs: cold };
}

interface SharedFigures {
  ttftMedianMs: number;
  ttftMaxMs: number;
  allDoneMs: number;
}

async function sharedSystemPrompt(target: Target, sizes: Sizes, seed: number, range: [number, number], clients = 8): Promise<SharedFigures> {
  const make = seededPrompts(seed, range);
  const system = make(sizes.systemTokens);
  const start = performance.now();
  const runs = await Promise.all(Array.from({ length: clients }, () => stream(target, [...system, ...make(sizes.questionTokens)], sizes.answerTokens)));
  const ttfts = runs.map(ttft);
  return { ttftMedianMs: median(ttfts), ttftMaxMs: Math.max(...ttfts), allDoneMs: performance.now() - start };
}

interface ArrivalFigures {
  itlMedianMs: number;
  itlP99Ms: number;
  itlMaxMs: number;
  longTtftMs: number;
}

async function longPromptArrival(target: Target, sizes: Sizes, seed: number, range: [number, number], streams = 8): Promise<ArrivalFigures> {
  const make = seededPrompts(seed, range);
  // The long prompt arrives once every stream has its first two tokens: all are decoding.
  let decoding = 0;
  let arrive!: () => void;
  const allDecoding = new Promise<void>((resolve) => (arrive = resolve));
  const running = Array.from({ length: streams }, () =>
    stream(target, make(16), sizes.streamTokens, (count) => {
      if (count === 2 && ++decoding === streams) arrive();
    }),
  );
  await allDecoding;
  const long = stream(target, make(sizes.longPromptTokens), 4);
  const [runs, longRun] = await Promise.all([Promise.all(running), long]);
  const gaps = runs.flatMap((times) => times.tokenTimes.slice(1).map((at, index) => at - times.tokenTimes[index]!));
  gaps.sort((a, b) => a - b);
  return { itlMedianMs: median(gaps), itlP99Ms: gaps[Math.min(gaps.length - 1, Math.floor(gaps.length * 0.99))]!, itlMaxMs: gaps.at(-1)!, longTtftMs: ttft(longRun) };
}

export const freshAgent = () => new http.Agent({ keepAlive: false, maxSockets: Infinity });
export const keepAliveAgent = () => new http.Agent({ keepAlive: true, maxSockets: Infinity });

export async function conversationSection(): Promise<void> {
  const quick = process.env.BENCH_QUICK === '1';
  const rounds = Number(process.env.BENCH_ROUNDS ?? (quick ? 1 : 3));
  const sizes = quick ? QUICK_SIZES : FULL_SIZES;
  console.log(`\n## Conversations, side by side with llama.cpp's server (prompt caches on both sides, ${rounds} round(s), medians)\n`);
  const version = llamaServerVersion();
  if (version === null) {
    console.log(`skipped: llama.cpp's server is not built at ${llamaServerBinary()} (run scripts/peer/build-llama-server.sh)`);
    return;
  }
  const model = quick
    ? { label: 'stories260K fp32 / F32', onnxDir: fileURLToPath(new URL('../models/stories260k/', import.meta.url)), dtype: null, gguf: await stories260kGguf('F32'), context: 512, range: [259, 512] as [number, number] }
    : await (async () => {
        const files = await ensureBenchModel();
        return { label: '135M-shaped q4 / Q4_0', onnxDir: files.onnxDir, dtype: 'q4', gguf: files.gguf.Q4_0, context: 1024, range: files.promptTokenRange };
      })();
  const load = () => loadavg().map((value) => value.toFixed(2)).join(' / ');
  const loadBefore = load();
  const ours = await startServer({ MODEL_DIR: model.onnxDir, ...(model.dtype ? { MODEL_DTYPE: model.dtype } : {}), SERVED_MODEL_NAME: 'bench' });
  const servers: Array<{ name: string; solo: Served; concurrent: Served }> = [];
  const oursServed: Served = { target: { label: 'this project', kind: 'ours', url: ours.url, extraBody: {}, agent: keepAliveAgent() }, stop: ours.stop };
  // The long-prompt scenario again on our server without chunked prefill: what slicing changes.
  const unchunked = await startServer({ MODEL_DIR: model.onnxDir, ...(model.dtype ? { MODEL_DTYPE: model.dtype } : {}), SERVED_MODEL_NAME: 'bench', ENABLE_CHUNKED_PREFILL: 'false' });
  const unchunkedTarget: Target = { label: 'this project, chunked prefill off', kind: 'ours', url: unchunked.url, extraBody: {}, agent: keepAliveAgent() };
  const unchunkedArrivals: ArrivalFigures[] = [];
  servers.push({ name: 'this project', solo: oursServed, concurrent: oursServed });
  const peer = async (parallel: number): Promise<Served> => {
    const handle = await startLlamaServer({ gguf: model.gguf, threads: 2, parallel, slotContext: model.context });
    return { target: { label: handle.label, kind: 'llama.cpp', url: handle.url, extraBody: { cache_prompt: true }, agent: freshAgent() }, stop: handle.stop };
  };
  try {
    servers.push({ name: "llama.cpp's server", solo: await peer(1), concurrent: await peer(9) });
    const chats: ChatFigures[][] = servers.map(() => []);
    const shared: SharedFigures[][] = servers.map(() => []);
    const arrivals: ArrivalFigures[][] = servers.map(() => []);
    // Warm-up: a short stream on every server.
    for (const server of servers) {
      await stream(server.solo.target, [1, 2, 3], 4);
      await stream(server.concurrent.target, [1, 2, 3], 4);
    }
    await stream(unchunkedTarget, [1, 2, 3], 4);
    for (let round = 0; round < rounds; round++) {
      // Rotated order per round; every round's prompts are new (seeded by round), so caches start cold.
      for (let turn = 0; turn < servers.length; turn++) {
        const index = (round + turn) % servers.length;
        const server = servers[index]!;
        chats[index]!.push(await growingChat(server.solo.target, sizes, 100 + round, model.range));
        shared[index]!.push(await sharedSystemPrompt(server.concurrent.target, sizes, 200 + round, model.range));
        arrivals[index]!.push(await longPromptArrival(server.concurrent.target, sizes, 300 + round, model.range));
      }
      unchunkedArrivals.push(await longPromptArrival(unchunkedTarget, sizes, 300 + round, model.range));
    }
    const med = <T>(list: T[], pick: (value: T) => number) => median(list.map(pick));
    const row = (name: string, figure: (index: number) => number, digits = 0) => {
      const [oursValue, peerValue] = [figure(0), figure(1)];
      return { figure: name, 'this project': oursValue.toFixed(digits), 'llama.cpp': peerValue.toFixed(digits), 'ours ÷ llama.cpp': (oursValue / peerValue).toFixed(2) };
    };
    console.log(`Model: ${model.label}. Peer: ${version}. Load average before ${loadBefore}, after ${load()} (1 / 5 / 15 min): a loaded machine's figures are not final.`);
    console.log(
      `Sizes: system ${sizes.systemTokens}, ${sizes.turns} turns of ${sizes.userTokens} + ${sizes.replyTokens}; 8 clients × ${sizes.questionTokens}-token questions, ${sizes.answerTokens}-token answers; ` +
        `8 streams of ${sizes.streamTokens} tokens, a ${sizes.longPromptTokens}-token prompt arriving.\n`,
    );
    console.log(
      formatTable([
        row(`growing chat: TTFT turns 2–${sizes.turns} summed (ms)`, (i) => med(chats[i]!, (c) => c.ttftTurnsAfterFirstMs)),
        row(`growing chat: turn ${sizes.turns} TTFT (ms)`, (i) => med(chats[i]!, (c) => c.lastTurnTtftMs)),
        row('the same length, cold: TTFT (ms)', (i) => med(chats[i]!, (c) => c.coldTtftMs)),
        row('shared system prompt, 8 clients: TTFT median (ms)', (i) => med(shared[i]!, (s) => s.ttftMedianMs)),
        row('shared system prompt, 8 clients: TTFT slowest (ms)', (i) => med(shared[i]!, (s) => s.ttftMaxMs)),
        row('shared system prompt, 8 clients: all answered (ms)', (i) => med(shared[i]!, (s) => s.allDoneMs)),
        row('8 streams, long prompt arriving: inter-token median (ms)', (i) => med(arrivals[i]!, (a) => a.itlMedianMs), 1),
        row('8 streams, long prompt arriving: inter-token p99 (ms)', (i) => med(arrivals[i]!, (a) => a.itlP99Ms), 1),
        row('8 streams, long prompt arriving: p99 ÷ median', (i) => med(arrivals[i]!, (a) => a.itlP99Ms / a.itlMedianMs), 2),
        row('8 streams, long prompt arriving: longest gap (ms)', (i) => med(arrivals[i]!, (a) => a.itlMaxMs)),
        row('the long prompt: TTFT (ms)', (i) => med(arrivals[i]!, (a) => a.longTtftMs)),
      ]),
    );
    const chunkedRow = (name: string, pick: (a: ArrivalFigures) => number, digits = 0) => {
      const [on, off] = [med(arrivals[0]!, pick), med(unchunkedArrivals, pick)];
      return { figure: name, 'chunked prefill on': on.toFixed(digits), off: off.toFixed(digits), 'on ÷ off': (on / off).toFixed(2) };
    };
    console.log('\nThis project, long prompt arriving, chunked prefill on (the default) and off:\n');
    console.log(
      formatTable([
        chunkedRow('inter-token median (ms)', (a) => a.itlMedianMs, 1),
        chunkedRow('inter-token p99 (ms)', (a) => a.itlP99Ms, 1),
        chunkedRow('p99 ÷ median', (a) => a.itlP99Ms / a.itlMedianMs, 2),
        chunkedRow('longest gap (ms)', (a) => a.itlMaxMs),
        chunkedRow('the long prompt: TTFT (ms)', (a) => a.longTtftMs),
      ]),
    );
  } finally {
    await unchunked.stop();
    for (const server of servers) {
      await server.solo.stop();
      if (server.concurrent !== server.solo) await server.concurrent.stop();
    }
  }
}
