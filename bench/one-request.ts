/**
 * One request at a time against running servers, alternating (argv[2]: comma-separated
 * URLs, a `peer:` prefix marks llama-server, which gets a fresh connection per request and
 * cache_prompt false): the stories260K "one request" figure of the size bench (16-token
 * prompt as ids, 32 tokens, greedy, ignore_eos), non-streaming and streaming, medians.
 * For profiling the fixed cost per request and per token, run the server under --cpu-prof.
 *   npx tsx bench/one-request.ts http://127.0.0.1:PORT[,peer:http://127.0.0.1:PORT2] [rounds] [max_tokens]
 */
import { completionTokensPerSecond, streamTiming, type CompletionTarget } from './load-client.js';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';

const targets: CompletionTarget[] = process.argv[2].split(',').map((spec) =>
  spec.startsWith('peer:')
    ? { label: 'llama-server', url: spec.slice(5), model: 'bench', keepAlive: false, extraBody: { cache_prompt: false } }
    : { label: `ours ${spec}`, url: spec, model: 'bench', keepAlive: true },
);
const rounds = Number(process.argv[3] ?? 200);
const maxTokens = Number(process.argv[4] ?? 32);
const streaming = process.env.NO_STREAM !== '1';
// STREAM_ONLY=1: streamed requests only (for a profile of the SSE path).
const plain = process.env.STREAM_ONLY !== '1';
const prompt = (seed: number) => Array.from({ length: 16 }, (_, i) => 259 + ((seed * 31 + i * 17) % 253));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

// PIDS=pid1,pid2 (the servers' processes, same order): server CPU time per request too,
// from /proc (user + system ticks), which a loaded machine's waiting does not inflate.
const pids = process.env.PIDS?.split(',').map(Number);
const cpuTicks = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]);
};
const ticks = targets.map(() => 0);
const samples = targets.map(() => ({ single: [] as number[], stream: [] as number[], ttft: [] as number[] }));
for (let round = 0; round < rounds; round++) {
  for (let k = 0; k < targets.length; k++) {
    const i = (k + round) % targets.length;
    const ticksBefore = pids ? cpuTicks(pids[i]) : 0;
    if (plain) samples[i].single.push(await completionTokensPerSecond(targets[i], prompt(round), maxTokens));
    if (streaming) {
      const timing = await streamTiming(targets[i], prompt(round + 7), maxTokens);
      samples[i].stream.push((maxTokens / timing.totalMs) * 1000);
      samples[i].ttft.push(timing.ttftMs);
    }
    if (pids) ticks[i] += cpuTicks(pids[i]) - ticksBefore;
  }
}
const requestsPerRound = (plain ? 1 : 0) + (streaming ? 1 : 0);
for (const [i, target] of targets.entries()) {
  const s = samples[i];
  console.log(
    `${target.label}: one request ${plain ? median(s.single).toFixed(0) : '–'} tok/s` +
      (streaming ? `, streaming ${median(s.stream).toFixed(0)} tok/s, TTFT ${median(s.ttft).toFixed(2)} ms` : '') +
      (pids ? `, server CPU ${((ticks[i] * 10) / (rounds * requestsPerRound)).toFixed(2)} ms per request` : ''),
  );
}
if (targets.length === 2) {
  // Paired: each round measured both servers back to back, so the ratio of a round cancels most of the machine's drift.
  const ratio = (key: 'single' | 'stream' | 'ttft') => median(samples[1][key].map((value, round) => value / samples[0][key][round]));
  console.log(
    `second ÷ first, median of per-round ratios: one request ${plain ? ratio('single').toFixed(3) : '–'}` +
      (streaming ? `, streaming ${ratio('stream').toFixed(3)}, TTFT ${ratio('ttft').toFixed(3)}` : ''),
  );
}
console.log(`load ${loadavg().map((l) => l.toFixed(2)).join(' / ')}`);
