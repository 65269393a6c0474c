import { spawn, type ChildProcess } from 'node:child_process';
import OpenAI from 'openai';
import { afterAll, beforeAll } from 'vitest';
import { npmStartArgs, npmStartEnv } from '../../scripts/build-server.js';

export interface RunningServer {
  url: string;
  child: ChildProcess;
  output: () => string;
  /** Sends `signal` and resolves with the exit code. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export interface ExitedServer {
  code: number | null;
  output: string;
}

/** What `npm start` runs (its node flags and environment included), built once by test/e2e/build-server.global.ts. */
const SERVER_ARGS = npmStartArgs();
const SERVER_ENV = npmStartEnv();

function start(env: Record<string, string>, args: readonly string[] = []): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [...SERVER_ARGS, ...args], {
    env: { ...process.env, ...SERVER_ENV, CONFIG: '', HOST: '127.0.0.1', PORT: '0', MODEL_DIR: 'models/stories260k', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (data: Buffer) => (output += data.toString()));
  child.stderr!.on('data', (data: Buffer) => (output += data.toString()));
  return { child, output: () => output };
}

/** `npm start`'s server as it runs it (node dist/node/server.js serve), on a free port; `args` as after `npm start --`. */
export function spawnServer(env: Record<string, string> = {}, args: readonly string[] = []): Promise<RunningServer> {
  const { child, output } = start(env, args);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in time:\n${output()}`)), 30_000);
    const onData = () => {
      const match = /Listening on (http:\/\/\S+)/.exec(output());
      if (!match) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolve({
        url: match[1]!,
        child,
        output,
        stop: (signal = 'SIGTERM') => {
          if (child.exitCode === null) child.kill(signal);
          return exited;
        },
      });
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with code ${code} before listening:\n${output()}`));
    });
  });
}

/** Runs the server expecting it to refuse to start. */
export function spawnFailingServer(env: Record<string, string>, args: readonly string[] = []): Promise<ExitedServer> {
  const { child, output } = start(env, args);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not exit:\n${output()}`));
    }, 30_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output: output() });
    });
  });
}

/**
 * For a test file: `npm start`'s server on a free port for the whole file, and the
 * official openai client pointed at it (no retries, so errors surface at once).
 */
export function servedOpenAIClient(): { readonly client: OpenAI } {
  let server: RunningServer | undefined;
  let client: OpenAI | undefined;
  beforeAll(async () => {
    server = await spawnServer();
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-needed', maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.stop();
  });
  return {
    get client() {
      if (!client) throw new Error('the server is not started yet (use the client inside tests)');
      return client;
    },
  };
}

/** For a test file: `npm start`'s server on a free port for the whole file, with `env` added. */
export function servedUrl(env: Record<string, string> = {}): { readonly url: string } {
  let server: RunningServer | undefined;
  beforeAll(async () => {
    server = await spawnServer(env);
  });
  afterAll(async () => {
    await server?.stop();
  });
  return {
    get url() {
      if (!server) throw new Error('the server is not started yet (use the url inside tests)');
      return server.url;
    },
  };
}
