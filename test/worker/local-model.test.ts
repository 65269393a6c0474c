/**
 * The Worker entry with the embedded model, run by onnxruntime-web inside workerd.
 * References: test/fixtures/golden-greedy.json (what the Node engine reproduces) and the
 * real Node server from global-setup.ts.
 */
import { describe, expect, inject, it, vi } from 'vitest';
import { LocalEngine } from '../../src/engine/local-engine.js';
import worker from '../../src/runtime/worker/main.js';
import { createWorkerHandler } from '../../src/runtime/worker/handler.js';
import { embeddedModelFiles } from '../../src/runtime/worker/model.js';
import { workerOrt } from '../../src/runtime/worker/ort.js';
import { embeddedTokenizerFiles } from '../../src/runtime/worker/tokenizer-files.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import golden from '../fixtures/golden-greedy.json';
import { postJson, recordingUpstream, ssePayloads, workerEnv } from './helpers.js';

const defaultEnv = workerEnv();
const files = embeddedTokenizerFiles();
const tokenizer = HfTokenizer.fromJson(files.tokenizerJson, files.tokenizerConfig);

function generateStreamText(payloads: string[]): string {
  return payloads.map((p) => (JSON.parse(p) as { text: string[] }).text[0]).join('');
}

describe('the embedded model in workerd', () => {
  it('generates the golden greedy tokens, token for token', async () => {
    const engine = await LocalEngine.create({ ort: workerOrt(), files: embeddedModelFiles(), servedModelName: 'stories260k' });
    try {
      expect(engine.tokenizer.encode(golden.prompt, { addSpecialTokens: true })).toEqual(golden.prompt_ids);
      const ids: number[] = [];
      const params = defaultSamplingParams({ temperature: 0, maxTokens: golden.completion_ids.length });
      for await (const delta of engine.generate({ promptTokenIds: golden.prompt_ids, params })) ids.push(...delta.tokenIds);
      expect(ids).toEqual(golden.completion_ids);
    } finally {
      await engine.dispose();
    }
  });

  it('streams POST /generate event by event with the golden text', async () => {
    const response = await postJson(worker, defaultEnv, '/generate', {
      prompt: golden.prompt,
      max_tokens: golden.completion_ids.length,
      temperature: 0,
      stream: true,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const payloads = await ssePayloads(response);
    expect(generateStreamText(payloads)).toBe(golden.completion_text);
    // One event per token that released text: close to one per token, not one blob.
    expect(payloads.length).toBeGreaterThan(golden.completion_ids.length * 0.9);
  });

  it('streams /v1/chat/completions with the same reply as the Node server', async () => {
    const request = {
      model: 'stories260k',
      messages: [{ role: 'user', content: 'Tell me a story about a dog.' }],
      temperature: 0,
      max_tokens: 60,
    };
    const nodeResponse = await fetch(`${inject('nodeServerUrl')}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    const nodeReply = ((await nodeResponse.json()) as { choices: { message: { content: string } }[] }).choices[0].message.content;
    expect(nodeReply.length).toBeGreaterThan(20);

    const response = await postJson(worker, defaultEnv, '/v1/chat/completions', { ...request, stream: true });
    expect(response.status).toBe(200);
    const payloads = await ssePayloads(response);
    expect(payloads.at(-1)).toBe('[DONE]');
    const chunks = payloads.slice(0, -1).map((p) => JSON.parse(p) as { choices: { delta: { role?: string; content?: string }; finish_reason: string | null }[] });
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    const contentChunks = chunks.filter((c) => c.choices[0]?.delta.content);
    expect(contentChunks.length).toBeGreaterThan(10);
    expect(contentChunks.map((c) => c.choices[0].delta.content).join('')).toBe(nodeReply);
    expect(chunks.some((c) => c.choices[0]?.finish_reason === 'length')).toBe(true);
  });

  it('stops generating when the client cancels the stream', async () => {
    let engine: LocalEngine | undefined;
    const handler = createWorkerHandler(async (_env, config) => {
      engine = await LocalEngine.create({ ort: workerOrt(), files: embeddedModelFiles(), servedModelName: config.servedModelName });
      return { engine, sharedStepLoop: true };
    }, 'models/stories260k');
    const env = workerEnv();
    const response = await postJson(handler, env, '/generate', {
      prompt: golden.prompt,
      max_tokens: 500,
      ignore_eos: true,
      temperature: 0,
      stream: true,
    });
    const reader = response.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first.startsWith('data: ')).toBe(true);
    await reader.cancel();
    // Give the engine loop a few turns to notice.
    for (let i = 0; i < 50 && engine!.stats().running > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(engine!.stats().running).toBe(0);
    expect(engine!.stats().generatedTokens).toBeLessThan(500);
    await engine!.dispose();
  });
});

describe('Worker configuration from vars', () => {
  it('delegates generation instead when an upstream is configured', async () => {
    const request = { prompt: golden.prompt, max_tokens: 20, temperature: 0 };
    const upstream = recordingUpstream(' from upstream.');
    const viaBinding = await postJson(worker, workerEnv({ UPSTREAM: upstream }), '/generate', request);
    expect(((await viaBinding.json()) as { text: string[] }).text).toEqual([`${golden.prompt} from upstream.`]);
    expect(upstream.requests).toEqual([expect.objectContaining({ prompt: golden.prompt_ids, max_tokens: 20, temperature: 0 })]);

    const viaUrl = await postJson(worker, workerEnv({ UPSTREAM_URL: inject('nodeServerUrl') }), '/generate', request);
    expect(viaUrl.status).toBe(200);
    const text = ((await viaUrl.json()) as { text: string[] }).text[0];
    expect((golden.prompt + golden.completion_text).startsWith(text)).toBe(true);
    expect(text.length).toBeGreaterThan(golden.prompt.length + 20);
  });

  it('serves the model under SERVED_MODEL_NAME and caps output at MAX_ITER_TIMES', async () => {
    const env = workerEnv({ SERVED_MODEL_NAME: 'edge-stories', MAX_ITER_TIMES: '5' });
    const models = await worker.fetch(new Request('http://worker.test/v1/models'), env);
    expect(((await models.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual(['edge-stories']);

    const wrongModel = await postJson(worker, env, '/v1/completions', { model: 'stories260k', prompt: 'Hi' });
    expect(wrongModel.status).toBe(404);

    // MindIE's rule: /generate output is capped at maxIterTimes whatever max_tokens asks.
    const response = await postJson(worker, env, '/generate', { prompt: golden.prompt, max_tokens: 50, temperature: 0 });
    const body = (await response.json()) as { text: string[] };
    const firstFiveTokens = tokenizer.decode(golden.completion_ids.slice(0, 5));
    expect(body.text).toEqual([golden.prompt + firstFiveTokens]);
  });

  it('refuses to start on an invalid var, naming it', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const env = workerEnv({ MAX_ITER_TIMES: 'lots' });
    const response = await worker.fetch(new Request('http://worker.test/v1/models'), env);
    expect(response.status).toBe(500);
    const body = (await response.json()) as { message: string; type: string };
    expect(body.message).toMatch(/maxIterTimes/);
    expect(error).toHaveBeenCalled();
    error.mockRestore();
  });

  it('requires the bearer token when API_TOKEN (the former name of API_KEY) is set, except on /health', async () => {
    const env = workerEnv({ API_TOKEN: 'edge-secret' });
    const request = { prompt: golden.prompt, max_tokens: 3, temperature: 0 };
    const anonymous = await postJson(worker, env, '/generate', request);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    expect(((await anonymous.json()) as { type: string }).type).toBe('UnauthorizedError');
    const wrong = await postJson(worker, env, '/generate', request, { authorization: 'Bearer edge-secreT' });
    expect(wrong.status).toBe(401);
    const health = await worker.fetch(new Request('http://worker.test/health'), env);
    expect(health.status).toBe(200);
    const allowed = await postJson(worker, env, '/generate', request, { authorization: 'Bearer edge-secret' });
    expect(allowed.status).toBe(200);
    expect(((await allowed.json()) as { text: string[] }).text[0].startsWith(golden.prompt)).toBe(true);
  });
});
