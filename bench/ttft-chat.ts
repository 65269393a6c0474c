/**
 * The conversation bench's growing chat and cold prompt alone (bench/conversation.ts, issue
 * #38's two TTFT goals), our server against llama.cpp's (`--parallel 1`, 2 threads, its
 * prompt cache on), rounds interleaved in rotated order, per turn: time to first token on
 * each side and llama.cpp's own prompt timings (prompt_n, prompt_ms). With TTFT_BASE=<a copy
 * of dist/node/server.js built before a change> a second server of ours runs that build in
 * the same rounds: before and after in one run. Loaded machine: read ratios.
 *
 *   npx tsx bench/ttft-chat.ts [rounds=3]
 */
import { growingChat, keepAliveAgent, freshAgent, FULL_SIZES, stream, type ChatFigures, type Target } from './conversation.js';
import { startServer } from './http.js';
import { llamaServerVersion, startLlamaServer } from './peer.js';
import { ensureBenchModel } from './size-models.js';
import { median } from './stats.js';
import { loadavg } from 'node:os';

const rounds = Number(process.argv[2] ?? 3);
if (llamaServerVersion() === null) throw new Error('llama.cpp server not built (scripts/peer/build-llama-server.sh)');
const files = await ensureBenchModel();
const env = { MODEL_DIR: files.onnxDir, MODEL_DTYPE: 'q4', SERVED_MODEL_NAME: 'bench', ...(JSON.parse(process.env.TTFT_ENV ?? '{}') as Record<string, string>) };
const load = () => loadavg().map((value) => value.toFixed(2)).join(' / ');
const loadBefore = load();
const servers: Array<{ target: Target; stop(): Promise<void> }> = [];
const ours = await startServer(env);
servers.push({ target: { label: 'ours', kind: 'ours', url: ours.url, extraBody: {}, agent: keepAliveAgent() }, stop: ours.stop });
const llama = await startLlamaServer({ gguf: files.gguf.Q4_0, threads: 2, parallel: 1, slotContext: 1024 });
servers.push({ target: { label: 'llama.cpp', kind: 'llama.cpp', url: llama.url, extraBody: { cache_prompt: true }, agent: freshAgent() }, stop: llama.stop });
if (process.env.TTFT_BASE) {
  const base = await startServer(env, process.env.TTFT_BASE);
  servers.push({ target: { label: 'ours before', kind: 'ours', url: base.url, extraBody: {}, agent: keepAliveAgent() }, stop: base.stop });
}
try {
  for (const { target } of servers) await stream(target, [1, 2, 3], 4);
  const figures: ChatFigures[][] = servers.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (let turn = 0; turn < servers.length; turn++) {
      const index = (round + turn) % servers.length;
      figures[index]!.push(await growingChat(servers[index]!.target, FULL_SIZES, 100 + round, files.promptTokenRange));
    }
  }
  console.log(`135M q4 vs Q4_0, ${rounds} round(s), medians (ms); load before ${loadBefore}, after ${load()}: loaded, ratios only`);
  const labels = servers.map(({ target }) => target.label);
  console.log(`| figure | ${labels.join(' | ')} | ours ÷ llama.cpp |${servers.length > 2 ? ' before ÷ llama.cpp |' : ''}`);
  console.log(`| --- | ${labels.map(() => '---').join(' | ')} | --- |${servers.length > 2 ? ' --- |' : ''}`);
  const row = (name: string, pick: (figure: ChatFigures) => number) => {
    const values = figures.map((list) => median(list.map(pick)));
    const extra = values.length > 2 ? ` ${(values[2]! / values[1]!).toFixed(2)} |` : '';
    console.log(`| ${name} | ${values.map((value) => value.toFixed(1)).join(' | ')} | ${(values[0]! / values[1]!).toFixed(2)} |${extra}`);
  };
  for (let turn = 0; turn < FULL_SIZES.turns; turn++) row(`turn ${turn + 1} TTFT`, (figure) => figure.turnTtftsMs[turn]!);
  row('turns 2–8 summed', (figure) => figure.ttftTurnsAfterFirstMs);
  row('cold 808 TTFT', (figure) => figure.coldTtftMs);
  const llamaIndex = 1;
  const timings = figures[llamaIndex]!.map((figure) => figure.turnPromptTimings);
  console.log(
    "llama.cpp's own prompt timings per turn (prompt_n tokens / prompt_ms, median over rounds): " +
      Array.from({ length: FULL_SIZES.turns }, (_, turn) => {
        const n = median(timings.map((list) => list[turn]?.promptN ?? NaN));
        const ms = median(timings.map((list) => list[turn]?.promptMs ?? NaN));
        return `${n}/${ms.toFixed(1)}`;
      }).join(', '),
  );
} finally {
  for (const server of servers) await server.stop();
}
