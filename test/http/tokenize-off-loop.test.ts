import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Hono } from 'hono';
import { convertLlama2cTokenizer } from '../../src/convert/llama2c-tokenizer.js';
import type { Engine } from '../../src/engine/types.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { createNodeTokenizerThread } from '../../src/tokenizer/node-tokenizer-thread.js';
import type { TokenizerThread } from '../../src/tokenizer/tokenizer-thread.js';
import { readSentencepiece32kModel } from '../tokenizer/helpers/paths.js';
import { readSentencepiecePieces, toLlama2cTokenizerBin } from '../tokenizer/helpers/sentencepiece-model.js';
import { expectNoStall, withHeartbeat } from './heartbeat.js';
import { MODEL, expectErrorBody, loadEngine, postJson, testApp } from './helpers.js';

// The 32 K SentencePiece vocabulary behind a 64 K-token context:
// one 60 K-character word passes the length bound (16 characters a token at most); 40 K took
// 0.16 s quiet, 0.65 s at load 10 in one synchronous call (the probe: 201 ms held at load 4.7; 41 ms on the thread).
const files = convertLlama2cTokenizer(toLlama2cTokenizerBin(readSentencepiecePieces(readSentencepiece32kModel())));
const tokenizer = HfTokenizer.fromJson(files.tokenizerJson, files.tokenizerConfig, { keepSource: true });
const reference = HfTokenizer.fromJson(files.tokenizerJson, files.tokenizerConfig);
const word = Array.from({ length: 60_000 }, (_, i) => 'etaoinshrdlucmfw'[(i * 31 + (i >> 3)) % 16]).join('');

const jobs: Array<{ signal?: AbortSignal; outcome: Promise<string> }> = [];
let engine: Engine;
let app: Hono;
let app32k: Hono;
beforeAll(async () => {
  engine = await loadEngine();
  app = testApp(engine);
  const thread = createNodeTokenizerThread(tokenizer.takeSource()!);
  // Every job the thread gets, and how it ended: the abort tests below look at them.
  tokenizer.offLoop = {
    encode(job, signal) {
      const done = thread.encode(job, signal);
      jobs.push({ signal, outcome: done.then(() => 'tokenized', (error: unknown) => `stopped: ${(error as Error).message}`) });
      return done;
    },
    close: () => thread.close(),
  } satisfies TokenizerThread;
  // Same engine (the heartbeat's stream runs on it), seen with the 32 K tokenizer and a context its 35.6 K tokens fit in.
  const seen = Object.create(engine, { tokenizer: { value: tokenizer }, info: { value: { ...engine.info, maxModelLen: 65_536 } } }) as Engine;
  app32k = testApp(seen, { maxInputTokenLen: 65_535 });
});
afterAll(async () => {
  await tokenizer.offLoop?.close();
  await engine?.dispose?.();
});

describe('/tokenize of a long unbroken word with a tokenizer thread', () => {
  it('gives the tokens encode() gives, and the event loop is not held (the lag probe counts CPU time held)', async () => {
    const expected = reference.encode(word);
    const { result, report } = await withHeartbeat(app, async () => {
      const response = await postJson(app32k, '/tokenize', { prompt: word });
      return { status: response.status, body: (await response.json()) as { tokens: number[] } };
    });
    expect(result.status).toBe(200);
    expect(result.body.tokens).toEqual(expected);
    console.log(`held ${report.maxBlockedMs.toFixed(1)} ms, /health ${report.maxHealthMs.toFixed(1)} ms`);
    expectNoStall(report, 150);
  });
});

describe('a client that leaves while its prompt is on the tokenizer thread', () => {
  // Each route with the long word as its prompt (within the 64 K-token context by its length).
  const routes: Array<[string, string, unknown]> = [
    ['chat', '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: word }], max_tokens: 4 }],
    ['completions', '/v1/completions', { model: MODEL, prompt: word, max_tokens: 4 }],
    ['generate', '/generate', { prompt: word, max_tokens: 4 }],
    ['tokenize (chat form)', '/tokenize', { model: MODEL, messages: [{ role: 'user', content: word }] }],
    ['tokenize', '/tokenize', { model: MODEL, prompt: word }],
  ];
  for (const [name, path, body] of routes) {
    it(`${name}: its job on the thread stops, the response is a 499, and the next text is tokenized as before`, async () => {
      const before = jobs.length;
      const client = new AbortController();
      const pending = postJson(app32k, path, body, { signal: client.signal });
      await vi.waitFor(() => expect(jobs.length).toBe(before + 1), { timeout: 10_000, interval: 2 });
      client.abort(new Error('client gone'));
      const response = await pending;
      expect(response.status).toBe(499);
      expectErrorBody(await response.json(), 499, 'ClientClosedRequest');
      // The thread was handed the request's signal and stopped on it, rather than finishing the word.
      expect(jobs[before].signal?.aborted).toBe(true);
      expect(await jobs[before].outcome).toBe('stopped: client gone');
      const next = await postJson(app32k, '/tokenize', { model: MODEL, prompt: word.slice(0, 2000) });
      expect((await next.json()).tokens).toEqual(reference.encode(word.slice(0, 2000)));
    });
  }
});
