/**
 * A shutting-down Node server answers every request that was sent before it stopped
 * taking connections (issue 41, family 13; CI saw a client's "fetch failed" under load):
 * connections the kernel had queued while the loop was busy are taken and answered before
 * the listener closes, a response being prepared says `Connection: close`, and a request
 * that has no answer when the grace period ends (its body still being read, a queue
 * elsewhere) gets the cut error instead of a reset connection. A real node:http server.
 */
import { request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpError } from '../../src/http/errors.js';
import { capConnections, nodeServerOptions } from '../../src/runtime/node/connections.js';
import { answerableAtShutdown } from '../../src/runtime/node/unanswered-requests.js';

const started: Server[] = [];
afterEach(async () => {
  for (const server of started.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const settings = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5000, maxConnections: 256 };

async function start(app: Hono) {
  const unanswered = answerableAtShutdown(app.fetch);
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: unanswered.fetch, hostname: '127.0.0.1', port: 0, serverOptions: nodeServerOptions(settings) }, () => resolve(s as Server)) as Server;
  });
  started.push(server);
  const connections = capConnections(server, settings);
  return { server, port: (server.address() as AddressInfo).port, connections, unanswered };
}

interface Answer {
  status: number | string;
  headers?: IncomingHttpHeaders;
  body?: string;
}

/** A POST on its own connection: `sent` once its bytes are with the kernel; `answer` its status, or the error code. */
function post(port: number, path: string): { sent: Promise<void>; answer: Promise<Answer> } {
  let request!: ReturnType<typeof httpRequest>;
  const answer = new Promise<Answer>((resolve) => {
    request = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
    request.on('error', (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? error.message }));
  });
  const sent = new Promise<void>((resolve) => request.once('finish', () => resolve()));
  request.end('x'.repeat(1000));
  return { sent, answer };
}

function busyFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('a draining Node server', () => {
  it('takes and answers the connections the kernel queued while its loop was busy before it closes the listener', async () => {
    let draining = false;
    const app = new Hono();
    // Each request holds the loop, as a large body's parse does: the loop takes one queued connection a turn.
    app.post('/busy', async (c) => {
      await c.req.text();
      busyFor(15);
      return draining ? c.text('shutting down', 503) : c.text('done');
    });
    const { server, port, connections } = await start(app);
    const requests = Array.from({ length: 40 }, () => post(port, '/busy'));
    await Promise.all(requests.map((request) => request.sent));
    // Without this the test would prove nothing: some connections are still only the kernel's.
    expect(connections.stats().open).toBeLessThan(40);
    const closed = new Promise((resolve) => server.once('close', resolve));
    draining = true;
    connections.drain();
    const answers = await Promise.all(requests.map((request) => request.answer));
    expect(answers.map((answer) => answer.status).filter((status) => status !== 200 && status !== 503)).toEqual([]);
    expect(answers.some((answer) => answer.status === 503)).toBe(true);
    await closed;
    // Once drained, the listener is closed: a new connection is refused, not answered.
    expect((await post(port, '/busy').answer).status).toBe('ECONNREFUSED');
  });

  it('says Connection: close on a response being prepared when the drain starts, and closes that socket after it', async () => {
    const app = new Hono();
    app.post('/slow', async (c) => {
      await c.req.text();
      await new Promise((resolve) => setTimeout(resolve, 200));
      return c.text('done');
    });
    const { server, port, connections } = await start(app);
    const request = post(port, '/slow');
    await request.sent;
    await new Promise((resolve) => setTimeout(resolve, 50));
    const closed = new Promise((resolve) => server.once('close', resolve));
    connections.drain();
    const answer = await request.answer;
    expect(answer.status).toBe(200);
    expect(answer.headers?.connection).toBe('close');
    await closed;
  });
});

describe('requests without an answer at the grace deadline', () => {
  it('get the cut error in the API shape; a handler that returns later has its stream let go', async () => {
    let releaseHandler!: () => void;
    let streamCancelled = false;
    const app = new Hono();
    app.post('/stuck', async () => {
      await new Promise<void>((resolve) => (releaseHandler = resolve));
      const body = new ReadableStream({
        pull() {},
        cancel() {
          streamCancelled = true;
        },
      });
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
    });
    app.post('/quick', (c) => c.text('done'));
    const { port, unanswered } = await start(app);
    const stuck = post(port, '/stuck');
    expect((await post(port, '/quick').answer).status).toBe(200);
    await stuck.sent;
    await new Promise((resolve) => setTimeout(resolve, 50));
    const cutError = new HttpError(503, 'ServiceUnavailableError', 'The server is shutting down: the request was cut after the 10 ms grace period.');
    expect(unanswered.answerAll(cutError)).toBe(1);
    const answer = await stuck.answer;
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body ?? '')).toMatchObject({ object: 'error', type: 'ServiceUnavailableError', message: expect.stringMatching(/shutting down/) });
    releaseHandler();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(streamCancelled).toBe(true);
    // Answered requests are not answered twice.
    expect(unanswered.answerAll(cutError)).toBe(0);
  });
});
