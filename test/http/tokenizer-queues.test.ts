/**
 * Issue 41, family 4, the tokenizer thread: texts with long unbroken runs are tokenized on one
 * thread. It took them in arrival order with no deadline, so one client's many long prompts
 * made every other client wait for all of them. Now waiting texts are taken from clients in
 * turn (the client whose last job started longest ago goes next), at most
 * maxThreadQueuePerClient of a client's wait (a 429), and each text has maxTokenizationMs from
 * when it was queued (a 400 naming it if it ran past it, a 503 if it never got the thread).
 * Clients are told apart by the address the home notes for each request (Node: the socket's).
 */
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { convertLlama2cTokenizer } from '../../src/convert/llama2c-tokenizer.js';
import type { Engine } from '../../src/engine/types.js';
import { noteRequestClient } from '../../src/http/client-identity.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { createNodeTokenizerThread } from '../../src/tokenizer/node-tokenizer-thread.js';
import type { TokenizerThread, TokenizerThreadSettings } from '../../src/tokenizer/tokenizer-thread.js';
import { readSentencepiece32kModel } from '../tokenizer/helpers/paths.js';
import { readSentencepiecePieces, toLlama2cTokenizerBin } from '../tokenizer/helpers/sentencepiece-model.js';
import { callGate, type CallGate } from '../helpers/call-gate.js';
import { expectNoStall, withHeartbeat } from './heartbeat.js';
import { MODEL, expectErrorBody, loadEngine, testApp } from './helpers.js';

// The 32 K SentencePiece vocabulary: one unbroken word is one BPE call, on the thread past 256
// characters (30 K characters: ~0.1 s quiet, several times that loaded).
const files = convertLlama2cTokenizer(toLlama2cTokenizerBin(readSentencepiecePieces(readSentencepiece32kModel())));
const reference = HfTokenizer.fromJson(files.tokenizerJson, files.tokenizerConfig);
function word(length: number, salt: number): string {
  return Array.from({ length }, (_, i) => 'etaoinshrdlucmfw'[(i * 31 + (i >> 3) + salt) % 16]).join('');
}
const LONG = word(30_000, 0);
/** Short, but one run past 256 characters: it goes to the thread too, so it could only wait. */
const SHORT = word(600, 5);

/** A text the thread was handed: whose, and when it finished (performance.now()), once it has. */
interface Handed {
  client: string | undefined;
  finished: number | null;
}

const QUEUE = { maxQueued: 32, maxQueuedPerClient: 8 };

let engine: Engine;
/** The model's own app: the heartbeat's stream runs on it (the 32 K tokenizer's ids are not the model's). */
let plainApp: Hono;
const threads: TokenizerThread[] = [];

/**
 * An app serving the 32 K tokenizer (as npm start: a tokenizer thread with `settings`) over
 * `engine`, what its thread was handed, and the gate its texts pass (test/helpers/call-gate.ts).
 */
function appWithThread(settings: TokenizerThreadSettings): { app: Hono; handed: Handed[]; gate: CallGate } {
  const tokenizer = HfTokenizer.fromJson(files.tokenizerJson, files.tokenizerConfig, { keepSource: true });
  const thread = createNodeTokenizerThread(tokenizer.takeSource()!, settings);
  threads.push(thread);
  const handed: Handed[] = [];
  const gate = callGate();
  tokenizer.offLoop = {
    encode(job, signal, client) {
      const entry: Handed = { client, finished: null };
      handed.push(entry);
      const done = gate.pass(() => thread.encode(job, signal, client));
      const mark = () => (entry.finished = performance.now());
      done.then(mark, mark);
      return done;
    },
    close: () => thread.close(),
  } satisfies TokenizerThread;
  const seen = Object.create(engine, { tokenizer: { value: tokenizer }, info: { value: { ...engine.info, maxModelLen: 65_536 } } }) as Engine;
  return { app: testApp(seen, { maxInputTokenLen: 65_535 }), handed, gate };
}

/** POST /tokenize as `client` (the address the Node home would note). */
function tokenize(app: Hono, client: string, prompt: string): Promise<Response> {
  const request = new Request('http://localhost/tokenize', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt }),
  });
  noteRequestClient(request, client);
  return Promise.resolve(app.fetch(request));
}

beforeAll(async () => {
  engine = await loadEngine();
  plainApp = testApp(engine);
});
afterAll(async () => {
  for (const thread of threads) await thread.close();
  await engine?.dispose?.();
});

describe('the tokenizer thread: fair per client, bounded (family 4)', () => {
  it("one client's flood of long prompts delays another client's request by at most one of them", async () => {
    const { app, handed } = appWithThread(QUEUE);
    // The thread started (and its tokenizer built) outside the measure.
    expect((await tokenize(app, '10.0.0.1', SHORT)).status).toBe(200);
    const { result, report } = await withHeartbeat(plainApp, async () => {
      const before = handed.length;
      const flood = Array.from({ length: 6 }, () => tokenize(app, '10.0.0.66', LONG));
      // Every long prompt is on the thread's queue before the other client asks.
      await vi.waitFor(() => expect(handed.length - before).toBe(6), { timeout: 20_000, interval: 1 });
      const attack = handed.slice(before);
      const unfinishedWhenAsked = attack.filter((entry) => entry.finished === null).length;
      const askedAt = performance.now();
      const mine = await tokenize(app, '10.0.0.7', SHORT);
      const answeredAt = performance.now();
      const body = (await mine.json()) as { tokens: number[] };
      const floodStatuses = await Promise.all(flood.map(async (response) => (await response).status));
      // The attacker's texts that finished while the other client's waited.
      const overtaking = attack.filter((entry) => entry.finished !== null && entry.finished > askedAt && entry.finished <= answeredAt).length;
      return { status: mine.status, tokens: body.tokens, floodStatuses, unfinishedWhenAsked, overtaking, waitedMs: answeredAt - askedAt };
    });
    console.log(
      `short request behind ${result.unfinishedWhenAsked} of another client's long prompts: ${result.waitedMs.toFixed(0)} ms, ${result.overtaking} finished first; /health max ${report.maxHealthMs.toFixed(0)} ms (loaded)`,
    );
    // Meaningful only if the flood was still waiting when the other client asked (in arrival order it would wait for all).
    expect(result.unfinishedWhenAsked).toBeGreaterThanOrEqual(3);
    expect(result.status).toBe(200);
    expect(result.tokens).toEqual(reference.encode(SHORT));
    // At most the one running when it arrived.
    expect(result.overtaking).toBeLessThanOrEqual(1);
    expect(result.floodStatuses).toEqual(Array(6).fill(200));
    expectNoStall(report);
  });

  it('repeated: past its share a client gets a fast, small 429 with Retry-After in the error shape; others are still served', async () => {
    const { app, gate } = appWithThread(QUEUE);
    expect((await tokenize(app, '10.0.0.1', SHORT)).status).toBe(200);
    gate.gather(16);
    const flood = Array.from({ length: 16 }, (_, i) => tokenize(app, '10.0.0.66', word(20_000, i)));
    const answers = await Promise.all(
      flood.map(async (pending) => {
        const response = await pending;
        return { status: response.status, retryAfter: response.headers.get('retry-after'), text: await response.text() };
      }),
    );
    const refused = answers.filter((answer) => answer.status === 429);
    // All 16 reached the queue in one pass: one running and maxQueuedPerClient waiting were taken.
    expect(refused.length).toBe(16 - 1 - QUEUE.maxQueuedPerClient);
    for (const answer of refused) {
      expect(answer.retryAfter).toBe('1');
      expect(answer.text.length).toBeLessThan(1024);
      expectErrorBody(JSON.parse(answer.text), 429, 'RateLimitError');
      expect(JSON.parse(answer.text).message).toMatch(/Too many requests from this client wait for the tokenizer thread/);
    }
    expect(answers.filter((answer) => answer.status !== 429).every((answer) => answer.status === 200)).toBe(true);
    const other = await tokenize(app, '10.0.0.7', SHORT);
    expect(other.status).toBe(200);
  });
});

describe('the tokenizer thread: a deadline from enqueue (maxTokenizationMs)', () => {
  it('a text past its deadline gets a fast 400 (it ran) or 503 with Retry-After (it never started) naming maxTokenizationMs, never a hang; the server goes on', async () => {
    // 1 ms: far less than any BPE call on 20 K characters takes on any CPU, so every text on the
    // thread is past its deadline; the first is started at once (a 400), the others may wait (a 503).
    const { app } = appWithThread({ ...QUEUE, timeoutMs: 1 });
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 4 }, async (_, i) => {
        const response = await tokenize(app, `10.0.2.${i}`, word(20_000, i));
        return { status: response.status, retryAfter: response.headers.get('retry-after'), text: await response.text() };
      }),
    );
    const tookMs = performance.now() - started;
    console.log(`4 texts past a 1 ms deadline: ${answers.map((answer) => answer.status).join(', ')} in ${tookMs.toFixed(0)} ms (loaded)`);
    expect(answers.some((answer) => answer.status === 400)).toBe(true);
    for (const answer of answers) {
      expect([400, 503]).toContain(answer.status);
      expect(answer.text.length).toBeLessThan(1024);
      const body = JSON.parse(answer.text) as { message: string };
      if (answer.status === 400) {
        expectErrorBody(body, 400, 'BadRequestError');
        expect(body.message).toMatch(/took longer than 1 ms \(maxTokenizationMs\)/);
      } else {
        expectErrorBody(body, 503, 'ServiceUnavailableError');
        expect(answer.retryAfter).toBe('1');
        expect(body.message).toMatch(/maxTokenizationMs/);
      }
    }
    // The thread was stopped each time, never left tokenizing: the whole batch is answered in a few thread starts.
    expect(tookMs).toBeLessThan(15_000);
    // Text the loop tokenizes (no long run) is unaffected.
    const ordinary = await tokenize(app, '10.0.0.7', 'Once upon a time there was a little dog.');
    expect(ordinary.status).toBe(200);
    expect(((await ordinary.json()) as { tokens: number[] }).tokens).toEqual(reference.encode('Once upon a time there was a little dog.'));
  });
});
