/**
 * `BENCH_ONLY=gateway npm run bench`: what the gateway Worker adds in front of this
 * project's Node server, measured under plain workerd (the `workerd` binary wrangler
 * ships, serving wrangler's own bundle of `--env gateway`), not under `wrangler dev`,
 * whose proxy restarts workers mid-request under load and adds its own hop.
 *
 * One Node server (`npm start`'s build), one workerd process with the gateway pointed at
 * it, and this load client; direct and through-the-gateway runs alternate (so a slow
 * phase of the shared machine hits both), and each figure is reported with the median of
 * the per-pair ratios gateway / direct. At 1 stream: time to first token and decode
 * tok/s; at 64 simultaneous streams: TTFT p50/p90 and aggregate tok/s.
 *
 * GATEWAY_BENCH_STREAMS (default "1,64"), BENCH_RUNS, BENCH_TOKENS as for the rest.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { startServer } from './http.js';
import { terminate } from './child-process.js';
import { decodeTokensPerSecond, streamTiming, type CompletionTarget, type StreamTiming } from './load-client.js';
import { formatTable, median, percentile } from './stats.js';

const REPO = fileURLToPath(new URL('../', import.meta.url));
/** The binary wrangler itself runs (the `workerd` package, a dependency of wrangler). */
const WORKERD_BINARY = (createRequire(import.meta.url)('workerd') as { default: string }).default;

export interface GatewayBenchRow {
  streams: number;
  direct: { ttftP50Ms: number; ttftP90Ms: number; tokensPerSecond: number };
  gateway: { ttftP50Ms: number; ttftP90Ms: number; tokensPerSecond: number };
  /** Medians of the per-pair ratios gateway / direct. */
  pairedRatio: { ttftP50: number; ttftP90: number; tokensPerSecond: number };
  runs: number;
}

/** wrangler's bundle of the gateway entry, as `wrangler deploy --env gateway` would upload it. */
function bundleGateway(): string {
  const outDir = mkdtempSync(join(tmpdir(), 'gateway-bench-'));
  const result = spawnSync('npx', ['wrangler', 'deploy', '--dry-run', '--env', 'gateway', '--outdir', outDir], {
    cwd: REPO,
    env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_HIDE_BANNER: 'true', WRANGLER_SEND_METRICS: 'false' },
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`wrangler could not bundle the gateway:\n${result.stdout}\n${result.stderr}`);
  return outDir;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function capnpText(value: string): string {
  return JSON.stringify(value);
}

/** A workerd config serving the bundle on `port`, with `vars` as text bindings and loopback reachable. */
function workerdConfig(bundleDir: string, port: number, vars: Record<string, string>): string {
  const bindings = Object.entries(vars)
    .map(([name, text]) => `(name = ${capnpText(name)}, text = ${capnpText(text)})`)
    .join(',\n      ');
  const config = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "gateway", worker = .gateway),
    (name = "loopback", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "gateway")],
);
const gateway :Workerd.Worker = (
  modules = [(name = "worker-gateway.js", esModule = embed "worker-gateway.js")],
  compatibilityDate = "2026-05-01",
  compatibilityFlags = ["nodejs_compat"],
  bindings = [
      ${bindings}
  ],
  globalOutbound = "loopback",
);
`;
  const path = join(bundleDir, 'gateway.capnp');
  writeFileSync(path, config);
  return path;
}

export async function startWorkerd(upstreamUrl: string): Promise<{ url: string; stop(): Promise<void> }> {
  const bundleDir = bundleGateway();
  const port = await freePort();
  const configPath = workerdConfig(bundleDir, port, {
    UPSTREAM_URL: upstreamUrl,
    SERVED_MODEL_NAME: 'stories260k',
    MAX_SEQ_LEN: '512',
    // The request log is one console line per request: a cost the bench leaves out on both sides.
    LOG_REQUESTS: 'false',
    // Overhead, not load shedding: a loaded server may hold 64 streams' headers past 30 s.
    UPSTREAM_CONNECT_TIMEOUT_SECONDS: '300',
    UPSTREAM_FIRST_BYTE_TIMEOUT_SECONDS: '300',
  });
  const child: ChildProcess = spawn(WORKERD_BINARY, ['serve', configPath, '--experimental'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`workerd exited:\n${output}`);
    const up = await fetch(`${url}/health/live`).then((r) => r.ok, () => false);
    if (up) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url,
    stop: () => terminate(child),
  };
}

interface Sample {
  ttftP50Ms: number;
  ttftP90Ms: number;
  tokensPerSecond: number;
}

async function sample(target: CompletionTarget, prompt: readonly number[], streams: number, maxTokens: number): Promise<Sample> {
  const start = performance.now();
  const timings: StreamTiming[] = await Promise.all(Array.from({ length: streams }, () => streamTiming(target, prompt, maxTokens)));
  const seconds = (performance.now() - start) / 1000;
  const ttfts = timings.map((t) => t.ttftMs);
  return {
    ttftP50Ms: percentile(ttfts, 50),
    ttftP90Ms: percentile(ttfts, 90),
    // One stream: its decode rate after the first token; many: generated tokens per second of wall time.
    tokensPerSecond: streams === 1 ? decodeTokensPerSecond(timings[0], maxTokens) : (streams * maxTokens) / seconds,
  };
}

export async function benchGateway(options: { runs: number; maxTokens: number; streams?: number[] }): Promise<GatewayBenchRow[]> {
  const streamsList = options.streams ?? (process.env.GATEWAY_BENCH_STREAMS ?? '1,64').split(',').map(Number);
  const golden = JSON.parse(readFileSync(join(REPO, 'test', 'fixtures', 'golden-greedy.json'), 'utf8')) as { prompt_ids: number[] };
  const server = await startServer();
  const gateway = await startWorkerd(server.url);
  // A fresh connection per stream on both sides: a kept-alive socket the server closed
  // while idle (Node's 5 s keepAliveTimeout, passed on a loaded machine) fails the next request.
  const direct: CompletionTarget = { label: 'direct', url: server.url, model: 'stories260k', keepAlive: false };
  const viaGateway: CompletionTarget = { label: 'gateway', url: gateway.url, model: 'stories260k', keepAlive: false };
  const rows: GatewayBenchRow[] = [];
  try {
    // Warm both paths (the gateway builds itself on its first request).
    for (const target of [direct, viaGateway]) await sample(target, golden.prompt_ids, 4, 16);
    for (const streams of streamsList) {
      const pairs: Array<{ direct: Sample; gateway: Sample }> = [];
      for (let run = 0; run < options.runs; run++) {
        // Alternate which side goes first, so neither always runs on a warmer machine.
        if (run % 2 === 0) {
          const d = await sample(direct, golden.prompt_ids, streams, options.maxTokens);
          pairs.push({ direct: d, gateway: await sample(viaGateway, golden.prompt_ids, streams, options.maxTokens) });
        } else {
          const g = await sample(viaGateway, golden.prompt_ids, streams, options.maxTokens);
          pairs.push({ gateway: g, direct: await sample(direct, golden.prompt_ids, streams, options.maxTokens) });
        }
      }
      const side = (pick: (p: { direct: Sample; gateway: Sample }) => Sample) => ({
        ttftP50Ms: median(pairs.map((p) => pick(p).ttftP50Ms)),
        ttftP90Ms: median(pairs.map((p) => pick(p).ttftP90Ms)),
        tokensPerSecond: median(pairs.map((p) => pick(p).tokensPerSecond)),
      });
      rows.push({
        streams,
        direct: side((p) => p.direct),
        gateway: side((p) => p.gateway),
        pairedRatio: {
          ttftP50: median(pairs.map((p) => p.gateway.ttftP50Ms / p.direct.ttftP50Ms)),
          ttftP90: median(pairs.map((p) => p.gateway.ttftP90Ms / p.direct.ttftP90Ms)),
          tokensPerSecond: median(pairs.map((p) => p.gateway.tokensPerSecond / p.direct.tokensPerSecond)),
        },
        runs: options.runs,
      });
    }
  } finally {
    await gateway.stop();
    await server.stop();
  }
  return rows;
}

export function gatewayTable(rows: GatewayBenchRow[]): string {
  return formatTable(
    rows.map((row) => ({
      streams: row.streams,
      'TTFT p50 ms direct': row.direct.ttftP50Ms,
      'gateway': row.gateway.ttftP50Ms,
      'ratio': row.pairedRatio.ttftP50.toFixed(2),
      'TTFT p90 ms direct': row.direct.ttftP90Ms,
      'gateway ': row.gateway.ttftP90Ms,
      'ratio ': row.pairedRatio.ttftP90.toFixed(2),
      'tok/s direct': Math.round(row.direct.tokensPerSecond),
      'gateway  ': Math.round(row.gateway.tokensPerSecond),
      'ratio  ': row.pairedRatio.tokensPerSecond.toFixed(2),
    })),
  );
}
