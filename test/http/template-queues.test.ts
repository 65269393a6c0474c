/**
 * Issue 41, families 2 and 4, with the operator trusting request templates
 * (--trust-request-chat-template):
 * - family 4: the template thread served one job at a time from an unbounded queue, each
 *   job's deadline starting when it started: three slow 40-message renderings made an
 *   ordinary chat wait 30 s. Now a pool (templateThreads), a bounded queue taken from clients
 *   in turn (maxThreadQueue, maxThreadQueuePerClient), deadlines from enqueue;
 * - family 2: a request template's CPU within its steps (a large list it built, then scanned
 *   once a step) froze the loop: now every use of a large built value is paid per item, a
 *   request's own template renders on the thread under Node, and in workerd and the page
 *   (no thread) the step budget bounds it.
 * Clients are told apart by the address the home notes for each request (Node: the socket's).
 */
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { noteRequestClient } from '../../src/http/client-identity.js';
import { createNodeTemplateThread } from '../../src/tokenizer/node-template-thread.js';
import type { TemplateThread } from '../../src/tokenizer/template-thread.js';
import { callGate } from '../helpers/call-gate.js';
import { expectNoStall, withHeartbeat } from './heartbeat.js';
import { MODEL, expectErrorBody, loadEngine, testApp } from './helpers.js';

let engine: Engine;
/** The real pool behind a counter, and a gate (the floods reach the pool at once). */
let thread: TemplateThread & { jobs: number };
const gate = callGate();
/** As npm start builds it: two template threads, a queue of 8, 4 a client. */
let app: Hono;
/** As workerd and the page render: on the request's thread. */
let inlineApp: Hono;

const QUEUE = { size: 2, maxQueued: 8, maxQueuedPerClient: 4 };

beforeAll(async () => {
  engine = await loadEngine();
  const real = createNodeTemplateThread(QUEUE);
  thread = {
    jobs: 0,
    render: (...args) => ((thread.jobs += 1), gate.pass(() => real.render(...args))),
    close: () => real.close(),
  };
  app = testApp(engine, { trustRequestChatTemplate: true, maxChatTemplateMs: 4000 }, { templateThread: thread });
  inlineApp = testApp(engine, { trustRequestChatTemplate: true });
  // Both threads started outside the probes (each costs this thread ~30–60 ms once).
  const warm = await Promise.all([0, 1].map(() => chat(app, 'warm-up', { messages: messages(40), max_tokens: 1 })));
  expect(warm.map((response) => response.status)).toEqual([200, 200]);
});
afterAll(async () => {
  await thread.close();
  await engine.dispose();
});

function messages(count: number): Array<{ role: string; content: string }> {
  return Array.from({ length: count }, (_, i) => ({ role: (count - 1 - i) % 2 === 0 ? 'user' : 'assistant', content: `Hi ${i}` }));
}

/** POST /v1/chat/completions as `client` (the address the Node home would note). */
function chat(on: Hono, client: string, body: Record<string, unknown>): Promise<Response> {
  const request = new Request('http://localhost/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, ...body }),
  });
  noteRequestClient(request, client);
  return Promise.resolve(on.fetch(request));
}

// Spends its whole budget looping over the conversation: 2000 + 200 steps a message, 122 K
// for 600 messages; on the thread a few hundred ms each (loaded), then a 400 for the steps.
const SLOW_TEMPLATE = "{% for m in messages %}{% for n in messages %}{{ n['content'][:1] }}{% endfor %}{% endfor %}";
const slowBody = { messages: messages(600), max_tokens: 1, chat_template: SLOW_TEMPLATE };

/** An ordinary 40-message chat (the model's template, on a thread: over 32 messages): its status and time. */
async function ordinary(client: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const response = await chat(app, client, { messages: messages(40), max_tokens: 4, temperature: 0 });
  await response.arrayBuffer();
  return { status: response.status, ms: performance.now() - started };
}

describe('worker-thread queues: bounded, fair per client, deadlines from enqueue (family 4)', () => {
  it("one client's slow renderings do not hold another's ordinary chat: it finishes < 3 s, /health < 1 s", async () => {
    const { result, report } = await withHeartbeat(app, async () => {
      const attack = Array.from({ length: 3 }, () => chat(app, '10.0.0.66', slowBody));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const mine = await ordinary('10.0.0.7');
      const statuses = await Promise.all(attack.map(async (response) => (await response).status));
      return { mine, statuses };
    });
    console.log(`ordinary chat behind 3 slow renderings: ${result.mine.ms.toFixed(0)} ms; /health max ${report.maxHealthMs.toFixed(0)} ms (loaded)`);
    expect(result.mine.status).toBe(200);
    expect(result.mine.ms).toBeLessThan(3000);
    expect(result.statuses.every((status) => status === 400)).toBe(true);
    expectNoStall(report);
  });

  it('repeated: a flood from one client is refused past its share with a fast, small 429 (Retry-After); the queue never grows past its bound; others still served', async () => {
    gate.gather(16);
    const { result, report } = await withHeartbeat(app, async () => {
      const flood = Array.from({ length: 16 }, () => chat(app, '10.0.0.66', slowBody));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const mine = await ordinary('10.0.0.7');
      const answers = await Promise.all(
        flood.map(async (pending) => {
          const response = await pending;
          const text = await response.text();
          return { status: response.status, retryAfter: response.headers.get('retry-after'), text };
        }),
      );
      return { mine, answers };
    });
    const refused = result.answers.filter((answer) => answer.status === 429);
    console.log(`flood of 16: ${refused.length} refused 429, ordinary chat ${result.mine.ms.toFixed(0)} ms, /health max ${report.maxHealthMs.toFixed(0)} ms (loaded)`);
    // All 16 reached the pool in one pass: 2 running + 4 waiting were taken, the rest refused at once.
    expect(refused.length).toBe(16 - QUEUE.size - QUEUE.maxQueuedPerClient);
    for (const answer of refused) {
      expect(answer.retryAfter).toBe('1');
      expect(answer.text.length).toBeLessThan(1024);
      expectErrorBody(JSON.parse(answer.text), 429, 'RateLimitError');
      expect(JSON.parse(answer.text).message).toMatch(/Too many requests from this client wait for the template thread/);
    }
    // The others were rendered (and refused for their steps) or stopped at their deadline, counted from enqueue.
    for (const answer of result.answers.filter((a) => a.status !== 429)) {
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text).message).toMatch(/evaluation steps|maxChatTemplateMs/);
    }
    expect(result.mine.status).toBe(200);
    expect(result.mine.ms).toBeLessThan(3000);
    expectNoStall(report);
  });

  it('many clients at once: past maxThreadQueue a fast 503 with Retry-After in the error shape', async () => {
    gate.gather(16);
    const answers = await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const response = await chat(app, `10.0.1.${i}`, slowBody);
        return { status: response.status, retryAfter: response.headers.get('retry-after'), text: await response.text() };
      }),
    );
    const busy = answers.filter((answer) => answer.status === 503);
    // All 16 reached the pool in one pass: 2 running and 8 waiting were taken, the rest refused.
    expect(busy.length).toBe(16 - QUEUE.size - QUEUE.maxQueued);
    for (const answer of busy) {
      expect(answer.retryAfter).toBe('1');
      expect(answer.text.length).toBeLessThan(1024);
      expectErrorBody(JSON.parse(answer.text), 503, 'ServiceUnavailableError');
    }
    expect((await ordinary('10.0.0.7')).status).toBe(200);
  });
});

// A list of 2^k items built by doubling, then scanned once a step (`5 in ns.a`): before, each
// scan was one step whatever the list's size (1024 messages: 2.7–3.4 s on the loop, loaded).
const SCANNING_TEMPLATE =
  "{% set ns = namespace(a=[1]) %}{% for i in range(15) %}{% set ns.a = ns.a + ns.a %}{% endfor %}{% for i in range(4000) %}{{ 5 in ns.a }}{% endfor %}{% for i in range(200) %}{{ ns.a|sort|length }}{% endfor %}";

describe("a request template's CPU within its steps (family 2)", () => {
  it('under Node it renders on a template thread: a 400 for its steps, the loop free; repeated the same', async () => {
    const jobs = thread.jobs;
    const { result, report } = await withHeartbeat(app, async () => {
      const responses = await Promise.all(Array.from({ length: 4 }, () => chat(app, '10.0.0.66', { messages: messages(40), max_tokens: 1, chat_template: SCANNING_TEMPLATE })));
      return Promise.all(responses.map(async (response) => ({ status: response.status, body: await response.json() })));
    });
    expect(thread.jobs).toBe(jobs + 4);
    for (const answer of result) {
      expect(answer.status).toBe(400);
      expectErrorBody(answer.body, 400, 'BadRequestError', 'chat_template');
      expect(answer.body.message).toMatch(/evaluation steps/);
    }
    expectNoStall(report, 300);
  });

  it('a short request template renders on the thread too, its text as rendered inline', async () => {
    const jobs = thread.jobs;
    const template = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}";
    const body = { messages: messages(3), max_tokens: 4, temperature: 0, chat_template: template };
    const [threaded, inline] = await Promise.all([chat(app, '10.0.0.7', body), chat(inlineApp, '10.0.0.7', body)]);
    expect(thread.jobs).toBe(jobs + 1);
    const [a, b] = [await threaded.json(), await inline.json()];
    expect(a.usage.prompt_tokens).toBe(b.usage.prompt_tokens);
    expect(a.choices[0].message.content).toBe(b.choices[0].message.content);
  });

  it('in workerd and the page (no thread) the step budget pays per item: a fast 400, the loop held well under a second, repeated the same', async () => {
    const { result, report } = await withHeartbeat(inlineApp, async () => {
      const answers = [];
      for (let i = 0; i < 3; i++) {
        const response = await chat(inlineApp, '10.0.0.66', { messages: messages(40), max_tokens: 1, chat_template: SCANNING_TEMPLATE });
        answers.push({ status: response.status, body: await response.json() });
      }
      return answers;
    });
    for (const answer of result) {
      expect(answer.status).toBe(400);
      expectErrorBody(answer.body, 400, 'BadRequestError', 'chat_template');
      expect(answer.body.message).toMatch(/took more than 10000 evaluation steps/);
    }
    console.log(`scanning template inline: loop held ${report.maxBlockedMs.toFixed(0)} ms (loaded)`);
    expectNoStall(report, 300);
  });
});
