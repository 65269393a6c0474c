/**
 * Node side of the third-party upstream tests: llama.cpp's server (built by
 * scripts/peer/build-llama-server.sh into a cache outside the repository) on the same
 * stories260K weights as GGUF, on a free loopback port. When the binary or the weights
 * are missing, `start` builds it (scripts/peer/build-llama-server.sh) or says why instead of
 * throwing, so the tests that need it fail with that reason while every other workerd test
 * still runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, SHARED_MODEL_DIR } from '../convert/model-paths.js';

/** llama.cpp's own conversion of the stories260K checkpoint, committed beside it. */
export const GGUF_PATH = join(SHARED_MODEL_DIR, 'stories260K.gguf');

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

const BUILD_SCRIPT = join(REPO_ROOT, 'scripts', 'peer', 'build-llama-server.sh');

/**
 * The first `npm test` on a machine builds the binary (minutes, once: it is cached outside the
 * repository), so `npm install && npm test` is the whole set-up; the README names the Debian
 * build tools it needs. Its progress goes to the terminal; a failure becomes the reason the
 * llama-server tests fail with.
 */
async function buildLlamaServer(binary: string): Promise<string | undefined> {
  console.error(`[test setup] llama.cpp's server is not built at ${binary}: building it once with scripts/peer/build-llama-server.sh (several minutes)...`);
  const outcome = await new Promise<number | Error | null>((resolve) => {
    spawn('bash', [BUILD_SCRIPT], { stdio: ['ignore', 'ignore', 'inherit'] })
      .once('error', resolve)
      .once('close', resolve);
  });
  if (outcome === 0 && existsSync(binary)) return undefined;
  return (
    `scripts/peer/build-llama-server.sh could not build llama-server at ${binary} ` +
    `(${outcome instanceof Error ? outcome.message : `exit ${outcome}`}); it needs cmake, ninja-build, g++ and git (see the README, "Tests").`
  );
}

export interface LlamaServerOptions {
  /** A GGUF file; the stories260K weights by default. */
  model?: string;
  alias?: string;
  /** Arguments in place of the context override, slots and metrics the gateway tests use. */
  args?: string[];
}

export async function startLlamaServer(options: LlamaServerOptions = {}): Promise<LlamaServer> {
  const binary = llamaServerBinary();
  const model = options.model ?? GGUF_PATH;
  if (!existsSync(binary)) {
    const buildError = await buildLlamaServer(binary);
    if (buildError) return { error: buildError };
  }
  if (!existsSync(model)) return { error: `The GGUF weights are missing at ${model}.` };
  const args = [
    '-m', model,
    ...(options.args ?? [
      '--override-kv', `llama.context_length=int:${LLAMA_SLOT_CONTEXT}`,
      '-c', String(LLAMA_SLOT_CONTEXT * LLAMA_PARALLEL),
      '--parallel', String(LLAMA_PARALLEL),
      '--metrics',
    ]),
    '--threads', '1',
    '--host', '127.0.0.1',
    '--port', '0',
    '--alias', options.alias ?? 'stories260k',
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
