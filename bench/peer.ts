/**
 * The bench's peer: llama.cpp's server, built from node-llama-cpp's bundled llama.cpp sources
 * against its prebuilt libraries by scripts/peer/build-llama-server.sh (cached outside the
 * repository; the bench never builds it). Started on a free loopback port.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { terminate } from './child-process.js';

export function llamaServerBinary(): string {
  const cache = process.env.LLAMA_SERVER_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'edge-llm', 'llama-server');
  return join(cache, 'bin', 'llama-server');
}

/** The binary's version line, or null when it is not built. */
export function llamaServerVersion(): string | null {
  const binary = llamaServerBinary();
  if (!existsSync(binary)) return null;
  const run = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  const text = `${run.stdout}\n${run.stderr}`;
  return /version: .*/.exec(text)?.[0] ?? 'unknown version';
}

export interface PeerConfig {
  gguf: string;
  threads: number;
  parallel: number;
  /** Positions per slot. */
  slotContext: number;
  /** More llama-server flags (e.g. `--no-kv-unified`), also shown in the label. */
  extraArgs?: readonly string[];
}

export interface PeerHandle {
  url: string;
  config: PeerConfig;
  label: string;
  peakRssMiB(): number;
  stop(): Promise<void>;
}

export function peerLabel(config: PeerConfig): string {
  return [`llama.cpp --parallel ${config.parallel} --threads ${config.threads}`, ...(config.extraArgs ?? [])].join(' ');
}

export async function startLlamaServer(config: PeerConfig): Promise<PeerHandle> {
  const binary = llamaServerBinary();
  if (!existsSync(binary)) throw new Error(`llama-server is not built at ${binary}: run scripts/peer/build-llama-server.sh`);
  const args = [
    '-m', config.gguf,
    '--override-kv', `llama.context_length=int:${config.slotContext}`,
    '-c', String(config.slotContext * config.parallel),
    '--parallel', String(config.parallel),
    '--threads', String(config.threads),
    '--threads-batch', String(config.threads),
    '--host', '127.0.0.1',
    '--port', '0',
    '--alias', 'bench',
    '--no-webui',
    ...(config.extraArgs ?? []),
  ];
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const url = await new Promise<string | null>((resolve) => {
    const onData = (data: Buffer) => {
      log = (log + data.toString()).slice(-20_000);
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(log);
      if (match) resolve(match[1]);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', () => resolve(null));
    setTimeout(() => resolve(null), 120_000).unref();
  });
  if (url === null) {
    child.kill('SIGKILL');
    throw new Error(`llama-server did not start:\n${log.slice(-2000)}`);
  }
  // It listens before the model is loaded: /health says 503 until then.
  for (let i = 0; i < 1200; i++) {
    if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.stdout.removeAllListeners('data');
  child.stderr.removeAllListeners('data');
  child.stdout.resume();
  child.stderr.resume();
  return {
    url,
    config,
    label: peerLabel(config),
    peakRssMiB: () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024,
    stop: () => terminate(child),
  };
}

/** Greedy token ids from llama.cpp's native /completion (it returns the ids it sampled). */
export async function peerGreedyTokens(url: string, prompt: readonly number[], count: number): Promise<number[]> {
  const response = await fetch(`${url}/completion`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, n_predict: count, temperature: 0, ignore_eos: true, return_tokens: true, cache_prompt: false }),
  });
  if (!response.ok) throw new Error(`llama-server /completion: HTTP ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { tokens: number[] }).tokens;
}
