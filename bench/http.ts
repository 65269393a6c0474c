/**
 * The HTTP benchmark: the real server (dist/node/server.js with `npm start`'s node flags,
 * built first as its prestart does) in a child process on loopback, driven by a bounded
 * load client in this process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { buildServer, npmStartArgs, npmStartEnv } from '../scripts/build-server.js';
import { postBody } from './load-client.js';
import { median, percentile } from './stats.js';

export interface ServerHandle {
  url: string;
  child: ChildProcess;
  /** Peak resident set size of the server process so far (VmHWM), in MiB. */
  peakRssMiB(): number;
  stop(): Promise<void>;
}

let built: Promise<string> | undefined;

/**
 * `script`: another build of the server to run instead of this tree's (e.g. a copy of
 * dist/node/ taken before a change, for a before/after figure in one run).
 */
export async function startServer(env: Record<string, string> = {}, script?: string): Promise<ServerHandle> {
  // What `npm start` runs, so the peak RSS is a user's (tsx's loader alone added ~100 MiB),
  // and its pid is the server's own (no npm or tsx process in between).
  if (script === undefined) await (built ??= buildServer());
  const args = npmStartArgs();
  if (script !== undefined) args[args.length - 2] = script;
  const child = spawn(process.execPath, args, {
    // No request log: a line per request would cost the server time and this process memory.
    env: { ...process.env, ...npmStartEnv(), CONFIG: '', HOST: '127.0.0.1', PORT: '0', LOG_REQUESTS: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (data: Buffer) => (output += data.toString());
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 60_000);
    child.once('exit', (code) => reject(new Error(`server exited (${code}):\n${output}`)));
    child.stdout!.on('data', () => {
      const match = /Listening on (http:\/\/\S+)/.exec(output);
      if (!match) return;
      clearTimeout(timer);
      resolve({
        url: match[1],
        child,
        peakRssMiB: () => {
          const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
          const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN);
          return kb / 1024;
        },
        stop: () =>
          new Promise((done) => {
            child.removeAllListeners('exit');
            child.once('exit', () => done());
            child.kill('SIGTERM');
          }),
      });
    });
  });
}

const body = (model: string, maxTokens: number, stream: boolean) =>
  JSON.stringify({ model, prompt: 'Once upon a time', max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream });

/**
 * The load client speaks plain node:http over keep-alive connections: fetch's web streams
 * cost the client several times more CPU per chunk, and on a 2-core machine every cycle
 * the client spends is one the server under test does not get.
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

function post(url: string, payload: string, onData: (chunk: string) => void): Promise<number> {
  return postBody(url, payload, agent, onData);
}

/** One non-streaming completion: generated tokens per second of wall time. */
export async function nonStreaming(url: string, model: string, maxTokens: number): Promise<number> {
  const start = performance.now();
  let text = '';
  const status = await post(`${url}/v1/completions`, body(model, maxTokens, false), (chunk) => (text += chunk));
  if (status !== 200) throw new Error(`HTTP ${status}: ${text}`);
  const json = JSON.parse(text) as { usage: { completion_tokens: number } };
  return json.usage.completion_tokens / ((performance.now() - start) / 1000);
}

export interface StreamTiming {
  /** ms from sending the request to the first token. */
  ttft: number;
  /** ms between consecutive tokens. */
  gaps: number[];
  tokens: number;
  /** ms from sending to the end of the stream. */
  total: number;
}

/** One streaming completion, timing each token's arrival (one chunk per token). */
export async function streaming(url: string, model: string, maxTokens: number): Promise<StreamTiming> {
  const start = performance.now();
  let buffer = '';
  const arrivals: number[] = [];
  const status = await post(`${url}/v1/completions`, body(model, maxTokens, true), (chunk) => {
    const now = performance.now();
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (event.startsWith('data: {') && event.includes('"choices":[{')) arrivals.push(now);
    }
  });
  if (status !== 200) throw new Error(`HTTP ${status}: ${buffer}`);
  const total = performance.now() - start;
  const gaps = arrivals.slice(1).map((t, i) => t - arrivals[i]);
  return { ttft: arrivals[0] - start, gaps, tokens: arrivals.length, total };
}

export interface ConcurrencyResult {
  concurrency: number;
  aggregateTokensPerSecond: number;
  ttftP50: number;
  itlP50: number;
  itlP95: number;
}

/** `concurrency` simultaneous streams, all started together. */
export async function concurrent(url: string, model: string, concurrency: number, maxTokens: number): Promise<ConcurrencyResult> {
  const start = performance.now();
  const runs = await Promise.all(Array.from({ length: concurrency }, () => streaming(url, model, maxTokens)));
  const seconds = (performance.now() - start) / 1000;
  const tokens = runs.reduce((sum, run) => sum + run.tokens, 0);
  const gaps = runs.flatMap((run) => run.gaps);
  return {
    concurrency,
    aggregateTokensPerSecond: tokens / seconds,
    ttftP50: median(runs.map((run) => run.ttft)),
    itlP50: percentile(gaps, 50),
    itlP95: percentile(gaps, 95),
  };
}
