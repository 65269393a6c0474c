/**
 * Issue 41, family 13: SIGTERM behind a frozen render was handled only after it (22 s). On a
 * real server process (`npm start`'s, spawned), with request templates trusted and renderings
 * in flight (on the loop before: a request's own template within its steps; on the template
 * threads now): the signal is heard at once, every in-flight request gets an answer (its
 * own 400, or the documented 503 "shutting down" once the grace period ends, its rendering's
 * thread stopped), and the process exits within the grace period and a little more. Every
 * request sent before the signal is answered, wherever it was: a connection the kernel held
 * and the loop had not taken yet was reset, a body still being read got nothing (CI, loaded).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnServer } from '../e2e/spawn-server.js';

function configFile(settings: Record<string, unknown>): string {
  const path = join(mkdtempSync(join(tmpdir(), 'edge-llm-shutdown-render-')), 'config.json');
  writeFileSync(path, JSON.stringify(settings));
  return path;
}

function messages(count: number): Array<{ role: string; content: string }> {
  return Array.from({ length: count }, (_, i) => ({ role: (count - 1 - i) % 2 === 0 ? 'user' : 'assistant', content: `Hi ${i}` }));
}

// Builds a list of 2^13 items, then scans it once a step: before, rendered on the loop (32
// messages, a short template) for 0.3–1 s each with the scans uncharged.
const SCANNING_TEMPLATE =
  "{% set ns = namespace(a=[1]) %}{% for i in range(13) %}{% set ns.a = ns.a + ns.a %}{% endfor %}{% for i in range(3000) %}{{ 5 in ns.a }}{% endfor %}";
// Spends its whole budget (122 K steps over 600 messages) on a template thread: a few hundred
// ms each, one thread: still queued when the grace period ends. (Reading a 1000-message body
// costs the loop ~60 ms, loaded: JSON, the schema, GC; twelve at once delayed the signal ~0.9 s.)
const LOOPING_TEMPLATE = "{% for m in messages %}{% for n in messages %}{{ n['content'][:1] }}{% endfor %}{% endfor %}";

const GRACE_MS = 1000;

describe('SIGTERM with chat template renderings in flight (family 13)', () => {
  it('is heard at once; each request gets its 400 or the documented 503; the process exits within the grace period and a little more', async () => {
    const server = await spawnServer({
      CONFIG: configFile({ shutdownGraceMs: GRACE_MS, trustRequestChatTemplate: true, templateThreads: 1, maxThreadQueue: 256, maxThreadQueuePerClient: 256 }),
    });
    // node:http, not fetch: the test must know when each request has left (its 'finish'),
    // so that the signal comes after every one of them, however slowly this process runs.
    const post = (body: unknown) => {
      const payload = JSON.stringify(body);
      let request!: ClientRequest;
      const answer = new Promise<{ status: number; body: string }>((resolve) => {
        request = httpRequest(`${server.url}/v1/chat/completions`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
          response.on('error', (error) => resolve({ status: 0, body: `${error.message} after ${response.statusCode}` }));
        });
        request.on('error', (error) => resolve({ status: 0, body: error.message }));
      });
      const sent = new Promise<void>((resolve) => request.once('finish', () => resolve()));
      request.end(payload);
      return { sent, answer };
    };
    // Enough renderings that some are still queued when the grace period ends, on a quiet machine
    // as on a loaded one: one rendering alone is timed first and the count scaled to it (a fixed
    // count drained within the grace period on a fast machine, and nothing was left to cut).
    // The second rendering is timed: the first pays for the thread's start and the template's compile.
    const looping = { model: 'stories260k', messages: messages(600), max_tokens: 1, chat_template: LOOPING_TEMPLATE };
    expect((await post(looping).answer).status).toBe(400);
    const probeStarted = performance.now();
    expect((await post(looping).answer).status).toBe(400);
    const renderMs = performance.now() - probeStarted;
    // A request alone costs a few times its rendering (body, preparation): ten times over.
    const loopingCount = Math.min(150, Math.max(8, Math.ceil((10 * (1000 + GRACE_MS)) / renderMs)));
    const requests = [
      ...Array.from({ length: 6 }, () => post({ model: 'stories260k', messages: messages(32), max_tokens: 1, chat_template: SCANNING_TEMPLATE })),
      ...Array.from({ length: loopingCount }, () => post(looping)),
    ];
    // Every request has left; then time for the server to read them (bodies are the loop's
    // work, not a rendering's), so that renderings run and wait on the thread.
    await Promise.all(requests.map((request) => request.sent));
    await new Promise((resolve) => setTimeout(resolve, 1000));

    const signalled = performance.now();
    const exited = server.stop('SIGTERM');
    let heardMs = Number.NaN;
    while (Number.isNaN(heardMs) && performance.now() - signalled < 30_000) {
      if (/SIGTERM received/.test(server.output())) heardMs = performance.now() - signalled;
      else await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const code = await exited;
    const exitMs = performance.now() - signalled;
    const answers = await Promise.all(requests.map((request) => request.answer));
    const statuses = answers.map((answer) => answer.status);
    console.log(`one rendering ${renderMs.toFixed(0)} ms, ${loopingCount} sent; SIGTERM heard after ${heardMs.toFixed(0)} ms, exit after ${exitMs.toFixed(0)} ms (grace ${GRACE_MS}); statuses ${statuses.join(',')}`);

    expect(heardMs).toBeLessThan(1000);
    expect(exitMs).toBeLessThan(GRACE_MS + 3000);
    for (const answer of answers) {
      expect([400, 503], answer.body.slice(0, 300)).toContain(answer.status);
      const body = JSON.parse(answer.body);
      if (answer.status === 503) expect(body.message).toMatch(/The server is shutting down/);
      else expect(body.message).toMatch(/evaluation steps/);
    }
    // Renderings were still queued when the grace period ended: they were cut, as documented, and the exit code says so.
    expect(statuses).toContain(503);
    expect(code).toBe(1);
  });
});
