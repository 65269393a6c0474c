/**
 * A GGUF served by the Worker inside workerd, as the GGUF entry (src/runtime/worker/gguf.ts)
 * serves the file its build bundled: the bytes arrive as a Data module (wrangler.toml's
 * rule for *.gguf), the graph is built in the isolate on the first request. Reference: the
 * Node server on the same file (MODEL_DIR=file.gguf, started by global-setup.ts), which
 * test/gguf/llama-server-parity.test.ts checks against llama.cpp's server.
 */
import { describe, expect, inject, it, vi } from 'vitest';
import { createWorkerHandler } from '../../src/runtime/worker/handler.js';
import { workerGgufEngine } from '../../src/runtime/worker/gguf-engine.js';
import kquants from '../fixtures/gguf/tiny-llama-kquants.gguf';
import { postJson, workerEnv } from './helpers.js';

const FILE = 'tiny-llama-kquants.gguf';
const worker = createWorkerHandler(workerGgufEngine({ name: FILE, bytes: kquants }), FILE);
// The served name from the file, as under Node (wrangler.toml's top-level vars name the embedded model).
const env = workerEnv({ SERVED_MODEL_NAME: '' });

async function nodeServer(path: string, body: unknown): Promise<any> {
  const response = await fetch(`${inject('ggufNodeServerUrl')}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(response.status).toBe(200);
  return response.json();
}

async function inWorker(path: string, body: unknown, environment = env): Promise<any> {
  const response = await postJson(worker, environment, path, body);
  expect(response.status).toBe(200);
  return response.json();
}

describe('a bundled GGUF in workerd', () => {
  it('builds the graph on the first request and logs the startup report with the GGUF lines', async () => {
    const logged: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((line: unknown) => void logged.push(String(line)));
    try {
      const models = await (await worker.fetch(new Request('http://worker.test/v1/models'), env)).json();
      expect((models as { data: Array<{ id: string }> }).data.map((m) => m.id)).toEqual([FILE]);
    } finally {
      log.mockRestore();
    }
    expect(logged).toContainEqual(expect.stringMatching(/^GGUF: architecture llama \("tiny-llama-kquants"\)/));
    expect(logged).toContainEqual(expect.stringMatching(/^GGUF Q4_K ×12: MatMulNBits\/GatherBlockQuantized/));
    expect(logged).toContainEqual(expect.stringMatching(/^GGUF Q6_K ×3:/));
    expect(logged).toContainEqual(expect.stringContaining('GGUF graph: built in this isolate from the bundled file, executed by onnxruntime-web (WebAssembly, one thread) (quantized weights'));
    expect(logged).toContainEqual(expect.stringMatching(/^GGUF in the isolate: built in \d+ ms; about [\d.]+ MiB at the peak, [\d.]+ MiB resident, [\d.]+ MiB of the isolate's 122\.1 MiB left for the KV cache/));
    expect(logged).toContainEqual(expect.stringMatching(/^Model file: onnx\/model\.onnx built from tiny-llama-kquants\.gguf/));
  });

  it('gives the Node server’s greedy completions, chat and /tokenize on the same file', async () => {
    for (const prompt of ['Once upon a time', 'The little dog']) {
      const body = { model: FILE, prompt, max_tokens: 24, temperature: 0 };
      const [ours, theirs] = await Promise.all([inWorker('/v1/completions', body), nodeServer('/v1/completions', body)]);
      expect(theirs.usage.completion_tokens).toBeGreaterThan(4);
      expect(ours.choices[0].text).toBe(theirs.choices[0].text);
      expect(ours.usage).toEqual(theirs.usage);
    }
    // The chat template comes from the file.
    const chat = { model: FILE, messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 16, temperature: 0 };
    const [ours, theirs] = await Promise.all([inWorker('/v1/chat/completions', chat), nodeServer('/v1/chat/completions', chat)]);
    expect(ours.choices[0].message.content).toBe(theirs.choices[0].message.content);
    expect(ours.usage.prompt_tokens).toBe(theirs.usage.prompt_tokens);
    const tokenize = { model: FILE, prompt: 'Once upon a time, café ☃' };
    expect((await inWorker('/tokenize', tokenize)).tokens).toEqual((await nodeServer('/tokenize', tokenize)).tokens);
  });

  it('answers batched requests as it answers each alone', async () => {
    const prompts = ['Once upon a time', 'The little dog', 'A cat sat'];
    const alone: string[] = [];
    for (const prompt of prompts) alone.push((await inWorker('/v1/completions', { model: FILE, prompt, max_tokens: 16, temperature: 0 })).choices[0].text);
    const together = await Promise.all(prompts.map((prompt) => inWorker('/v1/completions', { model: FILE, prompt, max_tokens: 16, temperature: 0 })));
    expect(together.map((r) => r.choices[0].text)).toEqual(alone);
  });

  it('refuses to start past the isolate’s memory, with the figures', async () => {
    const response = await postJson(worker, workerEnv({ SERVED_MODEL_NAME: '', ISOLATE_MEMORY_BYTES: '40000000' }), '/v1/completions', { prompt: 'Once', max_tokens: 2 });
    expect(response.status).toBe(500);
    const { error } = (await response.json()) as { error: { message: string } };
    expect(error.message).toMatch(/Cannot load the GGUF "tiny-llama-kquants.gguf": tiny-llama-kquants.gguf would need about [\d.]+ MiB in the isolate while its graph is built .* more than the isolate's 38\.1 MiB \(ISOLATE_MEMORY_BYTES; a Cloudflare Worker has 128 MB\)/);
  });

  it('refuses to start when MODEL_GGUF names another file than the one bundled', async () => {
    const response = await postJson(worker, workerEnv({ MODEL_GGUF: 'models/other.gguf' }), '/v1/completions', { prompt: 'Once', max_tokens: 2 });
    expect(response.status).toBe(500);
    const { error } = (await response.json()) as { error: { message: string } };
    expect(error.message).toContain('MODEL_GGUF names models/other.gguf, but this Worker was built with tiny-llama-kquants.gguf');
  });
});
