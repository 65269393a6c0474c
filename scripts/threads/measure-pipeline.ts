/**
 * HTTP A/B of where the model call runs (modelThread main / worker) and of worker mode's
 * overlapped lanes, on the embedded model: one server process per configuration (what
 * `npm start` runs), this process the load client; rounds alternate the configurations in
 * rotating order, so a loaded machine's swings hit all alike; medians of tok/s and of the
 * paired ratios to the first configuration are printed, with the server's CPU time per
 * 1000 tokens (all its threads: what the overlap costs) and the load average.
 *
 *   npx tsx scripts/threads/measure-pipeline.ts [rounds] [tokens] [streams,...] [configs]
 *   configs: comma-separated main | worker | worker:<lanes>:<minRows>, e.g. "main,worker:1:0,worker:2:16"
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { startServer, type ServerHandle } from '../../bench/http.js';
import { aggregateTokensPerSecond, completionTokensPerSecond, type CompletionTarget } from '../../bench/load-client.js';

const [roundsArg = '7', tokensArg = '128', streamsArg = '1,8,32,64', configsArg = 'main,worker:2:16'] = process.argv.slice(2);
const rounds = Number(roundsArg);
const tokens = Number(tokensArg);
const streamCounts = streamsArg.split(',').map(Number);
const configs = configsArg.split(',').map((label) => {
  const [modelThread, lanes, minRows] = label.split(':');
  const env: Record<string, string> = { MODEL_THREAD: modelThread };
  if (lanes !== undefined) env.TMP_PIPELINE = `${lanes}:${minRows ?? 0}`;
  return { label, env };
});

const servers: ServerHandle[] = [];
for (const config of configs) servers.push(await startServer(config.env));
const targets: CompletionTarget[] = servers.map((server, index) => ({ label: configs[index].label, url: server.url, model: 'stories260k', keepAlive: true }));
const prompts = (streams: number) => Array.from({ length: streams }, (_, index) => [1, 403 + (index % 64), 407, 261, 378]);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const load = () => loadavg().map((value) => value.toFixed(1)).join(' / ');

/** The server process's CPU time so far (all its threads), in ms. */
function cpuMs(server: ServerHandle): number {
  const fields = readFileSync(`/proc/${server.child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** CPU ms the server spent per 1000 generated tokens, per configuration and stream count. */
const cpuPerKiloToken = configs.map(() => [] as number[]);

async function measure(target: CompletionTarget, streams: number, index = -1): Promise<number> {
  const cpuBefore = index >= 0 ? cpuMs(servers[index]) : 0;
  // One stream: the bench's "one request" (non-streaming); more: concurrent streams.
  const rate = streams === 1 ? await completionTokensPerSecond(target, prompts(1)[0], tokens) : await aggregateTokensPerSecond(target, prompts(streams), tokens);
  if (index >= 0) cpuPerKiloToken[index].push(((cpuMs(servers[index]) - cpuBefore) * 1000) / (streams * tokens));
  return rate;
}

console.log(`embedded model, ${tokens} tokens per request, ${rounds} rounds; load ${load()} (1 / 5 / 15 min)`);
try {
  for (const streams of streamCounts) {
    const results = configs.map(() => [] as number[]);
    for (const list of cpuPerKiloToken) list.length = 0;
    for (const target of targets) await measure(target, streams);
    for (let round = 0; round < rounds; round++) {
      for (let turn = 0; turn < targets.length; turn++) {
        const index = (turn + round) % targets.length;
        results[index].push(await measure(targets[index], streams, index));
      }
    }
    const cells = configs.map((config, index) => {
      const ratio = index === 0 ? '' : ` (${median(results[index].map((value, round) => value / results[0][round])).toFixed(2)}×)`;
      return `${config.label} ${median(results[index]).toFixed(0)}${ratio}, ${median(cpuPerKiloToken[index]).toFixed(0)} CPU ms/1k tok`;
    });
    console.log(`${streams} stream${streams === 1 ? '' : 's'}: ${cells.join(' | ')}; load ${load()}`);
  }
} finally {
  await Promise.all(servers.map((server) => server.stop()));
}
