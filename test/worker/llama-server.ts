/**
 * Node side of the third-party upstream tests: llama.cpp's server (built by
 * scripts/peer/build-llama-server.sh into a cache outside the repository) on the same
 * stories260K weights as GGUF, on a free loopback port. When the binary or the weights
 * are missing, `start` says why instead of throwing, so the tests that need it fail
 * with that reason while every other workerd test still runs; .ci/run builds it first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** CI checks out shared/ beside the repository clone; LLAMA_SERVER_GGUF points elsewhere (a worktree's run). */
export const GGUF_PATH = process.env.LLAMA_SERVER_GGUF ?? join(REPO_ROOT, '..', 'shared', 'models', 'stories260K', 'stories260K.gguf');

/** Where the build script puts it (its LLAMA_SERVER_CACHE / XDG_CACHE_HOME logic). */
export function llamaServerBinary(): string {
  const cache = process.env.LLAMA_SERVER_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'edge-llm', 'llama-server');
  return join(cache, 'bin', 'llama-server');
}

/**
 * Slots and per-slot context. The GGUF says 128 positions (the ONNX model 512); 2048 lets
 * the disconnect test ask for a generation long enough to be seen being cancelled.
 */
export const LLAMA_PARALLEL = 2;
export const LLAMA_SLOT_CONTEXT = 2048;

export type LlamaServer = { url: string; stop(): Promise<void> } | { error: string };

export async function startLlamaServer(): Promise<LlamaServer> {
  const binary = llamaServerBinary();
  if (!existsSync(binary)) return { error: `llama-server is not built at ${binary}: run scripts/peer/build-llama-server.sh (.ci/run does).` };
  if (!existsSync(GGUF_PATH)) return { error: `The GGUF weights are missing at ${GGUF_PATH}.` };
  const args = [
    '-m', GGUF_PATH,
    '--override-kv', `llama.context_length=int:${LLAMA_SLOT_CONTEXT}`,
    '-c', String(LLAMA_SLOT_CONTEXT * LLAMA_PARALLEL),
    '--parallel', String(LLAMA_PARALLEL),
    '--threads', '1',
    '--host', '127.0.0.1',
    '--port', '0',
    '--alias', 'stories260k',
    '--metrics',
  ];
  const child: ChildProcess = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const url = await new Promise<string | null>((resolve) => {
    const onData = (data: Buffer) => {
      log += data.toString();
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(log);
      if (match) resolve(match[1]);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', () => resolve(null));
    setTimeout(() => resolve(null), 30_000).unref();
  });
  if (url === null) {
    child.kill('SIGKILL');
    return { error: `llama-server did not start:\n${log.slice(-2000)}` };
  }
  // It listens before the model is loaded: /health says 503 until then.
  for (let i = 0; i < 300; i++) {
    const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (ok) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.stdout!.removeAllListeners('data');
  child.stderr!.removeAllListeners('data');
  child.stdout!.resume();
  child.stderr!.resume();
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
