/**
 * The GGUF Worker as a deployment runs it: `wrangler dev --env gguf` with the repository's
 * wrangler.toml, whose build step bundles the file [env.gguf.vars] MODEL_GGUF names
 * (test/fixtures/stories260K/stories260K.gguf) and whose isolate builds the graph on the
 * first request. Its greedy output over HTTP must equal the Node server's on the same file
 * (MODEL_DIR=stories260K.gguf).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type RunningServer } from '../e2e/spawn-server.js';
import { REPO_ROOT } from '../helpers/model.js';

// No metrics, no cf.json download, no update check: the tests run offline.
process.env.WRANGLER_SEND_METRICS = 'false';
process.env.CLOUDFLARE_CF_FETCH_ENABLED = 'false';
process.env.WRANGLER_HIDE_BANNER = 'true';
// The build reads wrangler.toml's MODEL_GGUF unless the environment names one.
delete process.env.MODEL_GGUF;
const { unstable_startWorker } = await import('wrangler');

const FILE = 'stories260K.gguf';
const cacheDir = mkdtempSync(join(tmpdir(), 'gguf-wrangler-dev-'));
let worker: Awaited<ReturnType<typeof unstable_startWorker>>;
let node: RunningServer;
let workerUrl: string;

beforeAll(async () => {
  [node, worker] = await Promise.all([
    spawnServer({ MODEL_DIR: join(REPO_ROOT, 'test/fixtures/stories260K', FILE), GGUF_CACHE_DIR: cacheDir }),
    unstable_startWorker({
      config: `${REPO_ROOT}wrangler.toml`,
      env: 'gguf',
      dev: { server: { hostname: '127.0.0.1', port: 0 }, inspector: false, watch: false, persist: false, remote: false, logLevel: 'warn' },
    }),
  ]);
  workerUrl = (await worker.url).origin;
}, 240_000);

afterAll(async () => {
  await worker?.dispose();
  await node?.stop();
  rmSync(cacheDir, { recursive: true, force: true });
});

async function post(base: string, path: string, body: unknown): Promise<Response> {
  return fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

describe('wrangler dev --env gguf', () => {
  it('bundled the file wrangler.toml names and serves it under its name', async () => {
    expect(JSON.parse(readFileSync(join(REPO_ROOT, 'dist/worker-gguf/model.json'), 'utf8')).name).toBe(FILE);
    const models = (await (await fetch(`${workerUrl}/v1/models`)).json()) as { data: Array<{ id: string; max_model_len: number }> };
    const nodeModels = (await (await fetch(`${node.url}/v1/models`)).json()) as typeof models;
    expect(models.data.map((m) => [m.id, m.max_model_len])).toEqual(nodeModels.data.map((m) => [m.id, m.max_model_len]));
    expect(models.data[0]!.id).toBe(FILE);
  }, 120_000);

  it('gives the Node server’s greedy text on the same file, whole and streamed', async () => {
    for (const prompt of ['Once upon a time', 'Lily and Tom went to the park']) {
      const body = { model: FILE, prompt, max_tokens: 40, temperature: 0 };
      const [ours, theirs] = await Promise.all([post(workerUrl, '/v1/completions', body), post(node.url, '/v1/completions', body)]);
      expect(ours.status).toBe(200);
      const [a, b] = (await Promise.all([ours.json(), theirs.json()])) as Array<{ choices: Array<{ text: string }>; usage: unknown }>;
      expect(a.choices[0]!.text).toBe(b.choices[0]!.text);
      expect(a.usage).toEqual(b.usage);
      expect(b.choices[0]!.text.length).toBeGreaterThan(40);
    }
    const stream = await post(workerUrl, '/generate', { prompt: 'Once upon a time', max_tokens: 40, temperature: 0, stream: true });
    expect(stream.status).toBe(200);
    const events = (await stream.text()).split('\n\n').filter((event) => event.startsWith('data: '));
    const streamed = events.map((event) => (JSON.parse(event.slice('data: '.length)) as { text: string[] }).text[0]).join('');
    const whole = (await (await post(node.url, '/v1/completions', { model: FILE, prompt: 'Once upon a time', max_tokens: 40, temperature: 0 })).json()) as { choices: Array<{ text: string }> };
    expect(streamed).toBe(whole.choices[0]!.text);
    expect(events.length).toBeGreaterThan(20);
  }, 120_000);
});
