/**
 * HTTP A/B of where the model call runs (modelThread main / worker) and of worker mode's
 * overlapped lanes, on the embedded model: one server process per configuration (what
 * `npm start` runs), this process the load client; rounds alternate the configurations in
 * rotating order, so a loaded machine's swings hit all alike; medians of tok/s and of the
 * paired ratios to the first configuration are printed, with the server's CPU time per
 * 1000 tokens (all its threads: what the overlap costs) and the load average.
 *
 *   npx tsx scripts/threads/measure-pipeline.ts [rounds] [tokens] [streams,...] [configs]
 *   configs: comma-separated MODEL_THREAD values, "main,worker" (worker: the default lanes, model-thread/lanes.ts)
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { startServer, type ServerHandle } from '../../bench/http.js';
import { aggregateTokensPerSecond, completionTokensPerSecond, type CompletionTarget } from '../../bench/load-client.js';

const [roundsArg = '7', tokensArg = '128', streamsArg = '1,8,32,64', configsArg = 'main,worker'] = process.argv.slice(2);
const rounds = Number(roundsArg);
const tokens = Number(tokensArg);
const streamCounts = streamsArg.split(',').map(Number);
const configs = configsArg.split(',').map((label) => ({ label, env: { MODEL_THREAD: label } }));

const servers: ServerHandle[] = [];
for (const config of configs) servers.push(await startServer(config.env));
const targets: CompletionTarget[] = servers.map((server, index) => ({ label: configs[index].label, url: server.url, model: 'stories260k', keepAlive: true }));
const prompts = (streams: number) => Array.from({ length: streams }, (_, index) => [1, 403 + (index % 64), 407, 261, 378]);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const load = () => loadavg().map((value) => value.toFixed(1)).join(' / ');

/** CPU time so far, in ms, of the server's main thread and of the whole process (all threads). */
function cpuMs(server: ServerHandle): { main: number; all: number } {
  const ms = (path: string) => {
    const fields = readFileSync(path, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  };
  const pid = server.child.pid;
  return { main: ms(`/proc/${pid}/task/${pid}/stat`), all: ms(`/proc/${pid}/stat`) };
}

/**
 * CPU ms per 1000 generated tokens, per configuration: the whole process, and its main
 * thread (JavaScript: HTTP, sampling, and the model call in main mode). On free cores a
 * configuration cannot beat 1000 / max(main thread, the rest) tokens per ms: a bound the
 * machine's load does not move much, unlike the wall clock.
 */
const cpuPerKiloToken = configs.map(() => ({ all: [] as number[], main: [] as number[] }));

async function measure(target: CompletionTarget, streams: number, index = -1): Promise<number> {
  const before = index >= 0 ? cpuMs(servers[index]) : { main: 0, all: 0 };
  // One stream: the bench's "one request" (non-streaming); more: concurrent streams.
  const rate = streams === 1 ? await completionTokensPerSecond(target, prompts(1)[0], tokens) : await aggregateTokensPerSecond(target, prompts(streams), tokens);
  if (index >= 0) {
    const after = cpuMs(servers[index]);
    const perKilo = 1000 / (streams * tokens);
    cpuPerKiloToken[index].all.push((after.all - before.all) * perKilo);
    cpuPerKiloToken[index].main.push((after.main - before.main) * perKilo);
  }
  return rate;
}

console.log(`embedded model, ${tokens} tokens per request, ${rounds} rounds; load ${load()} (1 / 5 / 15 min)`);
try {
  for (const streams of streamCounts) {
    const results = configs.map(() => [] as number[]);
    for (const cpu of cpuPerKiloToken) cpu.all.length = cpu.main.length = 0;
    for (const target of targets) await measure(target, streams);
    for (let round = 0; round < rounds; round++) {
      for (let turn = 0; turn < targets.length; turn++) {
        const index = (turn + round) % targets.length;
        results[index].push(await measure(targets[index], streams, index));
      }
    }
    const cells = configs.map((config, index) => {
      const ratio = index === 0 ? '' : ` (${median(results[index].map((value, round) => value / results[0][round])).toFixed(2)}×)`;
      const cpu = cpuPerKiloToken[index];
      return `${config.label} ${median(results[index]).toFixed(0)}${ratio}, CPU ms/1k tok ${median(cpu.all).toFixed(0)} (main thread ${median(cpu.main).toFixed(0)})`;
    });
    console.log(`${streams} stream${streams === 1 ? '' : 's'}: ${cells.join(' | ')}; load ${load()}`);
  }
} finally {
  await Promise.all(servers.map((server) => server.stop()));
}
