/**
 * `edge-llm serve owner/repo:QUANT` and `edge-llm serve owner/repo --dtype fp32` end to end,
 * against the local Hub (hub-server.ts): only what the model needs is fetched into the
 * Hugging Face cache, the server serves it under the id, serves it again offline from the
 * cache, and a missing repo is one line and exit code 1.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnFailingServer, spawnServer } from '../e2e/spawn-server.js';
import { startTestHub, type TestHub } from './hub-server.js';
import { GGUF_REPO, ONNX_REPO } from './fixtures.js';

let hub: TestHub;
beforeAll(async () => {
  hub = await startTestHub({ 'test-org/tiny-onnx': ONNX_REPO, 'test-org/tiny-gguf': GGUF_REPO });
});
afterAll(async () => {
  await hub.close();
});

const fetchedFiles = (since: number) =>
  hub.requests
    .slice(since)
    // Each file fetched is asked about once (a HEAD on resolve), whether its bytes then come from there or from storage.
    .filter((r) => r.method === 'HEAD' && r.path.includes('/resolve/'))
    .map((r) => r.path.replace(/^.*\/resolve\/[^/]+\//, ''));

async function complete(url: string, model: string): Promise<{ status: number; text?: string }> {
  const response = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt: 'Once upon a time', max_tokens: 4, temperature: 0 }),
  });
  const body = await response.json();
  return { status: response.status, text: body.choices?.[0]?.text };
}

describe('edge-llm serve MODEL by Hugging Face id', () => {
  it('serves owner/repo:QUANT from the Hub, then again offline from the cache', async () => {
    const env = { MODEL_DIR: '', HF_ENDPOINT: hub.url, HF_HOME: mkdtempSync(join(tmpdir(), 'edge-llm-hf-home-')) };
    const since = hub.requests.length;
    const online = await spawnServer(env, ['test-org/tiny-gguf:Q4_K_M']);
    let first: { status: number; text?: string };
    try {
      expect(online.output()).toContain('Hub: tiny-llama-Q4_K_M.gguf downloaded');
      first = await complete(online.url, 'test-org/tiny-gguf:Q4_K_M');
      expect(first.status).toBe(200);
    } finally {
      await online.stop();
    }
    // Only the one .gguf, none of the other quantizations.
    expect(hub.requests.slice(since).filter((r) => r.path.startsWith('/storage/'))).toHaveLength(1);
    const offlineSince = hub.requests.length;
    const offline = await spawnServer({ ...env, HF_HUB_OFFLINE: '1' }, ['test-org/tiny-gguf:Q4_K_M']);
    try {
      expect(await complete(offline.url, 'test-org/tiny-gguf:Q4_K_M')).toEqual(first);
    } finally {
      await offline.stop();
    }
    expect(hub.requests.length).toBe(offlineSince);
  });

  it('fetches only the --dtype fp32 graph of an ONNX repo', async () => {
    const env = { MODEL_DIR: '', HF_ENDPOINT: hub.url, HF_HOME: mkdtempSync(join(tmpdir(), 'edge-llm-hf-home-')) };
    const since = hub.requests.length;
    const server = await spawnServer(env, ['test-org/tiny-onnx', '--dtype', 'fp32', '--served-model-name', 'tiny']);
    try {
      expect((await complete(server.url, 'tiny')).status).toBe(200);
    } finally {
      await server.stop();
    }
    expect(fetchedFiles(since).sort()).toEqual(['config.json', 'generation_config.json', 'onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json']);
  });

  it.concurrent('says in one line that a repo does not exist, or was not downloaded when offline', async () => {
    const env = { MODEL_DIR: '', HF_ENDPOINT: hub.url, HF_HOME: mkdtempSync(join(tmpdir(), 'edge-llm-hf-home-')) };
    const [missing, offline] = await Promise.all([
      spawnFailingServer(env, ['test-org/none']),
      spawnFailingServer({ ...env, HF_HUB_OFFLINE: '1' }, ['test-org/tiny-onnx']),
    ]);
    expect(missing.code).toBe(1);
    expect(missing.output.trim().split('\n').at(-1)).toBe(`The Hugging Face repo test-org/none does not exist (or is private: set HF_TOKEN) at ${hub.url}.`);
    expect(offline.code).toBe(1);
    expect(offline.output).toMatch(/The model test-org\/tiny-onnx was not downloaded: HF_HUB_OFFLINE is set/);
    expect(offline.output).not.toMatch(/Bound http/);
  });
});
