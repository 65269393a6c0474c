/**
 * N concurrent streams against running servers, alternating (argv[2]: comma-separated URLs),
 * for an A/B of two builds or flags: aggregate tok/s and, with PIDS=pid1,pid2 (same order),
 * the server's CPU per generated token from /proc (user + system), which a loaded machine's
 * waiting does not inflate. Medians of the rounds; 128 tokens a stream, greedy, ignore_eos.
 *   PIDS=... npx tsx bench/streams-ab.ts http://127.0.0.1:A,http://127.0.0.1:B [streams=64] [rounds=6] [tokens=128]
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { concurrent } from './http.js';
import { median } from './stats.js';

const urls = process.argv[2].split(',');
const [streams, rounds, tokens] = [Number(process.argv[3] ?? 64), Number(process.argv[4] ?? 6), Number(process.argv[5] ?? 128)];
const pids = process.env.PIDS?.split(',').map(Number);
const cpuTicks = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]);
};
const rates = urls.map(() => [] as number[]);
const ticks = urls.map(() => 0);
for (let round = 0; round < rounds; round++) {
  for (let k = 0; k < urls.length; k++) {
    const i = (k + round) % urls.length;
    const before = pids ? cpuTicks(pids[i]) : 0;
    rates[i].push((await concurrent(urls[i], 'bench', streams, tokens)).aggregateTokensPerSecond);
    if (pids) ticks[i] += cpuTicks(pids[i]) - before;
  }
}
for (const [i, url] of urls.entries()) {
  const cpu = pids ? `, server CPU ${(((ticks[i] * 10) / (rounds * streams * tokens)) * 1000).toFixed(1)} µs a token` : '';
  console.log(`${url}: ${streams} streams ${median(rates[i]).toFixed(0)} tok/s${cpu}`);
}
console.log(`load ${loadavg().map((l) => l.toFixed(2)).join(' / ')}`);
process.exit(0);
