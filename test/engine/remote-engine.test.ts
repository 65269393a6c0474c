import { afterAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../src/config/server-config.js';
import { EngineOverloadedError, EngineRequestError } from '../../src/engine/errors.js';
import { UNKNOWN_TOKEN_ID } from '../../src/engine/remote/chunks.js';
import { UpstreamError } from '../../src/engine/remote/errors.js';
import { completionsUrl, RemoteEngine, type FetchLike, type UpstreamOptions } from '../../src/engine/remote/remote-engine.js';
import type { Engine, GenerationDelta } from '../../src/engine/types.js';
import { createApp } from '../../src/http/app.js';
import { ProtocolError } from '../../src/common/protocol-error.js';
import { readModelDir } from '../../src/runtime/node/model-dir.js';
import { defaultSamplingParams, type SamplingParams } from '../../src/sampling/params.js';
import { collectGeneration, embeddedEngine, golden, MODEL_DIR } from '../helpers/model.js';

const { onnx: _graph, ...tokenizerFiles } = await readModelDir(MODEL_DIR);

function remoteEngine(upstream: UpstreamOptions): RemoteEngine {
  return new RemoteEngine({ files: tokenizerFiles, servedModelName: 'stories260k', upstream });
}

function collect(engine: Engine, params: Partial<SamplingParams>, signal?: AbortSignal, promptTokenIds = golden.prompt_ids) {
  return collectGeneration(engine, promptTokenIds, params, signal);
}

/** This project's server, in process: the upstream a deployed edge would reach over the network. */
async function nodeServerFetch(): Promise<FetchLike> {
  const app = createApp({ engine: await embeddedEngine('native'), config: parseServerConfig({ servedModelName: 'stories260k' }) });
  return async (url, init) => app.fetch(new Request(url, init));
}

afterAll(async () => {
  await (await embeddedEngine('native')).dispose();
});

describe('RemoteEngine against this project\'s server', () => {
  it('streams the golden greedy continuation, one delta per upstream token, counted exactly', async () => {
    const engine = remoteEngine({ url: 'http://node.test', fetch: await nodeServerFetch() });
    const out = await collect(engine, { temperature: 0, maxTokens: 100 });
    expect(out.text).toBe(golden.completion_text);
    expect(out.tokenIds).toHaveLength(golden.completion_ids.length);
    expect(out.deltas).toHaveLength(golden.completion_ids.length);
    expect(out.deltas.every((d) => d.tokenIds.length === 1)).toBe(true);
    expect(out.finishReason).toBe('length');
    expect(engine.stats()).toMatchObject({ running: 0, generatedTokens: 100 });
  });

  it('forwards every sampling parameter: a seeded sample equals the local engine\'s', async () => {
    const local = await embeddedEngine('native');
    const engine = remoteEngine({ url: 'http://node.test/v1', fetch: await nodeServerFetch() });
    const params: Partial<SamplingParams> = {
      maxTokens: 60,
      minTokens: 10,
      temperature: 1.3,
      topK: 12,
      topP: 0.9,
      minP: 0.05,
      repetitionPenalty: 1.2,
      presencePenalty: 0.4,
      frequencyPenalty: 0.3,
      // Above int64's range: travels as the int64 with the same bits.
      seed: 12345678901234567890n,
    };
    const remote = await collect(engine, params);
    const direct = await collect(local, params);
    expect(remote.text).toBe(direct.text);
    expect(remote.tokenIds).toHaveLength(direct.tokenIds.length);
    expect(remote.finishReason).toBe(direct.finishReason);
    const otherSeed = await collect(engine, { ...params, seed: 7n });
    expect(otherSeed.text).not.toBe(remote.text);
  });

  it('lets the upstream apply stop strings and reports its stop reason', async () => {
    const local = await embeddedEngine('native');
    const engine = remoteEngine({ url: 'http://node.test', fetch: await nodeServerFetch() });
    const params = { temperature: 0, maxTokens: 100, stop: ['Lily'], includeStopStrInOutput: true };
    const remote = await collect(engine, params);
    const direct = await collect(local, params);
    expect(remote.text).toBe(', there was a little girl named Lily');
    expect(remote.text).toBe(direct.text);
    expect(remote.finishReason).toBe('stop');
    expect(remote.stopReason).toBe('Lily');
    expect(remote.tokenIds).toHaveLength(direct.tokenIds.length);
  });

  it('cancels the upstream generation when the caller aborts', async () => {
    const local = await embeddedEngine('native');
    const engine = remoteEngine({ url: 'http://node.test', fetch: await nodeServerFetch() });
    const controller = new AbortController();
    const deltas: GenerationDelta[] = [];
    for await (const delta of engine.generate({
      promptTokenIds: golden.prompt_ids,
      params: defaultSamplingParams({ temperature: 0, maxTokens: 400, ignoreEos: true }),
      signal: controller.signal,
    })) {
      deltas.push(delta);
      if (deltas.length === 3) controller.abort();
    }
    expect(deltas.at(-1)!.finishReason).toBe('abort');
    expect(deltas.length).toBeLessThan(50);
    for (let i = 0; i < 100 && local.stats().running > 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(local.stats().running).toBe(0);
    expect(engine.stats().running).toBe(0);
  });
});

/** A scripted upstream: records each request and answers with the given response. */
function scriptedUpstream(answer: (body: Record<string, unknown>, init: RequestInit) => Response | Promise<Response>) {
  const requests: Array<{ url: string; body: Record<string, unknown>; rawBody: string; headers: Headers; signal: AbortSignal }> = [];
  const fetch: FetchLike = async (url, init) => {
    const rawBody = init.body as string;
    const body = JSON.parse(rawBody) as Record<string, unknown>;
    requests.push({ url, body, rawBody, headers: new Headers(init.headers), signal: init.signal! });
    return answer(body, init);
  };
  return { fetch, requests };
}

/** An SSE body delivering `pieces` as separate network reads; `hang` leaves it open afterwards. */
function sseBody(pieces: string[], options: { hang?: boolean; signal?: AbortSignal | null } = {}): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      if (i < pieces.length) controller.enqueue(encoder.encode(pieces[i++]));
      else if (!options.hang) controller.close();
      else
        return new Promise<void>((_, reject) =>
          options.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')), { once: true }),
        );
    },
  });
}

const event = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
const chunk = (text: string, finish: string | null = null, usage: number | null = null, extra: Record<string, unknown> = {}) =>
  event({
    object: 'text_completion',
    choices: [{ index: 0, text, logprobs: null, finish_reason: finish, stop_reason: null, ...extra }],
    usage: usage === null ? null : { prompt_tokens: 5, completion_tokens: usage, total_tokens: 5 + usage },
  });
const sse = (body: ReadableStream<Uint8Array> | string) =>
  new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });

describe('RemoteEngine request', () => {
  it('posts a streamed /v1/completions with token ids and vLLM\'s parameter names', async () => {
    const upstream = scriptedUpstream(() => sse(chunk(' done', 'length', 1) + 'data: [DONE]\n\n'));
    const engine = remoteEngine({ url: 'http://vllm.internal:8000', fetch: upstream.fetch, apiKey: 'sk-upstream', model: 'meta/stories' });
    await collect(engine, {
      maxTokens: 7,
      minTokens: 2,
      temperature: 0.7,
      topK: 0,
      topP: 0.8,
      minP: 0.1,
      repetitionPenalty: 1.1,
      presencePenalty: 0.2,
      frequencyPenalty: -0.3,
      seed: 18446744073709551614n,
      stop: ['\n\n'],
      stopTokenIds: [13],
      includeStopStrInOutput: true,
      ignoreEos: true,
      skipSpecialTokens: false,
    });
    const [request] = upstream.requests;
    expect(request.url).toBe('http://vllm.internal:8000/v1/completions');
    expect(request.headers.get('authorization')).toBe('Bearer sk-upstream');
    expect(request.body).toEqual({
      model: 'meta/stories',
      prompt: golden.prompt_ids,
      stream: true,
      stream_options: { include_usage: true, continuous_usage_stats: true },
      max_tokens: 7,
      min_tokens: 2,
      temperature: 0.7,
      top_k: -1,
      top_p: 0.8,
      min_p: 0.1,
      repetition_penalty: 1.1,
      presence_penalty: 0.2,
      frequency_penalty: -0.3,
      // 2^64 - 2 as an int64: the same 64 bits; JSON.parse rounds it here, the raw text must not.
      seed: -2,
      stop: ['\n\n'],
      stop_token_ids: [13],
      include_stop_str_in_output: true,
      ignore_eos: true,
      skip_special_tokens: false,
    });
    expect(request.rawBody).toContain('"seed":-2}');

    const unseeded = scriptedUpstream(() => sse(chunk('.', 'stop', 1)));
    await collect(remoteEngine({ url: 'http://x', fetch: unseeded.fetch }), { seed: 9007199254740993n });
    expect(unseeded.requests[0].rawBody).toContain('"seed":9007199254740993}');
    expect(unseeded.requests[0].headers.has('authorization')).toBe(false);
    expect(unseeded.requests[0].body.model).toBe('stories260k');
  });

  it('passes logit_bias on, keyed by token id', async () => {
    const upstream = scriptedUpstream(() => sse(chunk('.', 'stop', 1)));
    await collect(remoteEngine({ url: 'http://x', fetch: upstream.fetch }), { logitBias: new Map([[13, -100], [5, 2.5]]) });
    expect(upstream.requests[0].body.logit_bias).toEqual({ 13: -100, 5: 2.5 });
    const plain = scriptedUpstream(() => sse(chunk('.', 'stop', 1)));
    await collect(remoteEngine({ url: 'http://x', fetch: plain.fetch }), {});
    expect(plain.requests[0].body).not.toHaveProperty('logit_bias');
  });

  it('joins the completions path onto a root or /v1 base URL', () => {
    expect(completionsUrl('http://h:8000')).toBe('http://h:8000/v1/completions');
    expect(completionsUrl('http://h:8000/')).toBe('http://h:8000/v1/completions');
    expect(completionsUrl('https://gw.example.com/llm/v1/')).toBe('https://gw.example.com/llm/v1/completions');
    expect(completionsUrl('https://gw.example.com/llm?x=1')).toBe('https://gw.example.com/llm/v1/completions?x=1');
  });

  it('refuses prompts the model cannot take before contacting the upstream', () => {
    const upstream = scriptedUpstream(() => sse(''));
    const engine = remoteEngine({ url: 'http://x', fetch: upstream.fetch });
    const params = defaultSamplingParams();
    expect(() => engine.generate({ promptTokenIds: [], params })).toThrow(EngineRequestError);
    expect(() => engine.generate({ promptTokenIds: [1, 512], params })).toThrow(/out of vocabulary/);
    expect(() => engine.generate({ promptTokenIds: new Array(512).fill(1), params })).toThrow(/context is 512 tokens/);
    expect(upstream.requests).toHaveLength(0);
  });
});

describe('RemoteEngine response', () => {
  it('yields each chunk as it arrives, even when events are split across reads', async () => {
    const stream = chunk('Once', null, 1) + chunk(' upon', null, 2) + chunk('', null, 3) + chunk(' a', 'length', 4) + 'data: [DONE]\n\n';
    // Cut the byte stream at awkward places: inside "data:", inside JSON, between \n\n.
    const pieces = [stream.slice(0, 3), stream.slice(3, 40), stream.slice(40, 41), stream.slice(41, 120), stream.slice(120)];
    const upstream = scriptedUpstream(() => sse(sseBody(pieces)));
    const out = await collect(remoteEngine({ url: 'http://x', fetch: upstream.fetch }), {});
    expect(out.deltas.map((d) => d.text)).toEqual(['Once', ' upon', '', ' a']);
    expect(out.deltas.map((d) => d.tokenIds)).toEqual([[UNKNOWN_TOKEN_ID], [UNKNOWN_TOKEN_ID], [UNKNOWN_TOKEN_ID], [UNKNOWN_TOKEN_ID]]);
    expect(out.finishReason).toBe('length');
  });

  it('takes exact token ids and logprobs from vLLM\'s return_tokens_as_token_ids', async () => {
    const withIds = (text: string, id: number, logprob: number, finish: string | null = null) =>
      chunk(text, finish, null, { logprobs: { tokens: [`token_id:${id}`], token_logprobs: [logprob], text_offset: [0], top_logprobs: null } });
    const upstream = scriptedUpstream(() => sse(withIds(',', 432, -0.5) + withIds(' there', 383, -0.25, 'stop') + 'data: [DONE]\n\n'));
    const out = await collect(remoteEngine({ url: 'http://x', fetch: upstream.fetch, tokenIds: 'logprobs' }), {});
    expect(upstream.requests[0].body).toMatchObject({ logprobs: 0, return_tokens_as_token_ids: true });
    expect(out.tokenIds).toEqual([432, 383]);
    expect(out.deltas.flatMap((d) => d.logprobs)).toEqual([-0.5, -0.25]);
  });

  it('gets exact totals from the final usage chunk when chunks carry no counts', async () => {
    const usageOnly = event({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 } });
    const upstream = scriptedUpstream(() => sse(chunk('Once upon') + chunk(' a time', 'stop') + usageOnly + 'data: [DONE]\n\n'));
    const engine = remoteEngine({ url: 'http://x', fetch: upstream.fetch });
    const out = await collect(engine, {});
    expect(out.text).toBe('Once upon a time');
    expect(out.tokenIds).toHaveLength(9);
    expect(engine.stats().generatedTokens).toBe(9);
  });

  it('aborts the upstream request when the consumer stops reading', async () => {
    let upstreamSignal: AbortSignal | undefined;
    const upstream = scriptedUpstream((_, init) => {
      upstreamSignal = init.signal!;
      return sse(sseBody([chunk('a', null, 1), chunk('b', null, 2)], { hang: true, signal: init.signal }));
    });
    const engine = remoteEngine({ url: 'http://x', fetch: upstream.fetch });
    for await (const delta of engine.generate({ promptTokenIds: [1], params: defaultSamplingParams() })) {
      expect(delta.text).toBe('a');
      break;
    }
    expect(upstreamSignal!.aborted).toBe(true);
    expect(engine.stats().running).toBe(0);
  });
});

describe('RemoteEngine errors', () => {
  const failing = (status: number, body: unknown, headers: Record<string, string> = {}) =>
    remoteEngine({ url: 'http://x', fetch: scriptedUpstream(() => Response.json(body, { status, headers })).fetch });

  it('maps an upstream 400 to an invalid request with the upstream\'s message and param', async () => {
    const engine = failing(400, { object: 'error', message: 'max_tokens is too large', type: 'BadRequestError', param: 'max_tokens', code: 400 });
    const error = await collect(engine, {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toMatchObject({ kind: 'invalid_request', message: 'max_tokens is too large', param: 'max_tokens' });
  });

  it('maps 503 and 429 to overload with the upstream\'s Retry-After', async () => {
    const busy = await collect(failing(503, { error: { message: 'busy' } }, { 'retry-after': '7' }), {}).catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(EngineOverloadedError);
    expect(busy).toMatchObject({ message: 'busy', retryAfterSeconds: 7 });
    const limited = await collect(failing(429, { error: { message: 'Rate limit' } }), {}).catch((e: unknown) => e);
    expect(limited).toMatchObject({ retryAfterSeconds: 1 });
    expect(limited).toBeInstanceOf(EngineOverloadedError);
  });

  it('reports credentials, missing models and upstream crashes as upstream failures', async () => {
    const refused = await collect(failing(401, { error: { message: 'Invalid API key' } }), {}).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(UpstreamError);
    expect(refused).toMatchObject({ upstreamStatus: 401, message: expect.stringMatching(/credentials.*Invalid API key/) });
    const crashed = await collect(failing(500, 'not json'), {}).catch((e: unknown) => e);
    expect(crashed).toMatchObject({ upstreamStatus: 500, message: 'The upstream failed (HTTP 500)' });
    const unreachable = remoteEngine({ url: 'http://x', fetch: async () => Promise.reject(new TypeError('fetch failed')) });
    await expect(collect(unreachable, {})).rejects.toThrow(/Cannot reach the upstream at http:\/\/x\/v1\/completions: fetch failed/);
  });

  it('raises an error event mid-stream after the deltas before it', async () => {
    const errorEvent = event({ error: { object: 'error', message: 'CUDA out of memory', type: 'InternalServerError', param: null, code: 500 } });
    const engine = remoteEngine({ url: 'http://x', fetch: scriptedUpstream(() => sse(chunk('Once', null, 1) + errorEvent + 'data: [DONE]\n\n')).fetch });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const delta of engine.generate({ promptTokenIds: [1], params: defaultSamplingParams() })) seen.push(delta.text);
    })().catch((e: unknown) => e);
    expect(seen).toEqual(['Once']);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as Error).message).toMatch(/CUDA out of memory/);
  });

  it('treats a stream that ends before the finish as a failure, not a short answer', async () => {
    const engine = remoteEngine({ url: 'http://x', fetch: scriptedUpstream(() => sse(chunk('Once', null, 1))).fetch });
    await expect(collect(engine, {})).rejects.toThrow(/ended the stream before the generation finished/);
  });
});
