/**
 * Process life: `npm start` itself getting SIGTERM stops the server (npm hands the signal
 * to plain node, no wrapper in between), and streams still running at the grace deadline
 * end with an error event (and [DONE] on the OpenAI routes) while the exit code says
 * requests were cut.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnServer } from './spawn-server.js';

function configFile(settings: Record<string, unknown>): string {
  const path = join(mkdtempSync(join(tmpdir(), 'edge-llm-shutdown-')), 'config.json');
  writeFileSync(path, JSON.stringify(settings));
  return path;
}

/** Reads an SSE body to its end, from its first event on. */
async function readEvents(response: Response, onFirst: () => void): Promise<string[]> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let first = true;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (first && text.includes('\n\n')) {
      first = false;
      onFirst();
    }
  }
  return text
    .split('\n\n')
    .filter((event) => event.startsWith('data: '))
    .map((event) => event.slice('data: '.length));
}

async function serverGone(url: string): Promise<boolean> {
  return fetch(`${url}/health`).then(
    () => false,
    () => true,
  );
}

describe('shutdown', () => {
  it('stops the server when the npm start process itself gets SIGTERM', async () => {
    // --ignore-scripts skips prestart's build (global setup built dist/node already, and a
    // rebuild would race the other test files using dist/): the start script runs as is.
    const npm = spawn('npm', ['start', '--silent', '--ignore-scripts'], {
      env: { ...process.env, CONFIG: '', HOST: '127.0.0.1', PORT: '0', MODEL_DIR: 'models/stories260k' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    npm.stdout!.on('data', (data: Buffer) => (output += data.toString()));
    npm.stderr!.on('data', (data: Buffer) => (output += data.toString()));
    const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      const onData = () => {
        const match = /Listening on (http:\/\/\S+)/.exec(output);
        if (match) resolve(match[1]!);
      };
      npm.stdout!.on('data', onData);
      void exited.then((code) => reject(new Error(`npm start exited (${code}) before listening:\n${output}`)));
    });
    expect((await fetch(`${url}/health`)).status).toBe(200);

    npm.kill('SIGTERM');
    await exited;
    // The server heard the signal itself and shut down cleanly: nothing listens any more.
    while (!(await serverGone(url))) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(output).toMatch(/SIGTERM received/);
    expect(output).toMatch(/Server stopped\./);
  });

  it('cuts streams running at the grace deadline with an error event (and [DONE]) and exits with 1', async () => {
    // Grace 0: whatever runs when the signal arrives is cut. The streams are long (n × 480
    // tokens, EOS ignored) so they are still running then.
    const server = await spawnServer({ CONFIG: configFile({ shutdownGraceMs: 0 }) });
    const post = (path: string, body: unknown) =>
      fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const completion = await post('/v1/completions', {
      model: 'stories260k',
      prompt: 'Once upon a time',
      max_tokens: 480,
      n: 16,
      temperature: 1,
      ignore_eos: true,
      stream: true,
    });
    const generate = await post('/generate', { prompt: 'Once upon a time', max_tokens: 480, n: 16, temperature: 1, ignore_eos: true, stream: true });
    expect(completion.status).toBe(200);
    expect(generate.status).toBe(200);

    let started = 0;
    let signalled = false;
    const onFirst = () => {
      started += 1;
      if (started === 2 && !signalled) {
        signalled = true;
        server.child.kill('SIGTERM');
      }
    };
    const [completionEvents, generateEvents] = await Promise.all([readEvents(completion, onFirst), readEvents(generate, onFirst)]);
    expect(await server.stop()).toBe(1);

    expect(completionEvents.at(-1)).toBe('[DONE]');
    const completionError = JSON.parse(completionEvents.at(-2)!) as { error: { code: number; message: string } };
    expect(completionError.error.code).toBe(503);
    expect(completionError.error.message).toMatch(/shutting down/);
    const generateError = JSON.parse(generateEvents.at(-1)!) as { error: { code: number; message: string } };
    expect(generateError.error.code).toBe(503);
    expect(generateError.error.message).toMatch(/shutting down/);
    expect(server.output()).toMatch(/Grace period over: cutting 2 requests/);
  });
});
