/**
 * Issue 41, families 7 and 8, on a real node:http server as `npm start` builds it (the
 * connection cap, the pipelining cap, the request-bytes budget around the app's fetch):
 * - 4 connections × 5,000 pipelined GETs in single writes (the audit: 50,000, /health gaps of
 *   5.6 s): each connection is closed past maxPipelinedRequests waiting requests, and /health on
 *   a fresh connection keeps answering;
 * - connections that declare large bodies and send all but their last byte (the audit: 128 ×
 *   16 MiB held 2.18 GB): past maxRequestBytesInFlight each is refused at once with a small
 *   503 and Retry-After, before a byte of its body is held.
 */
import { request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { capConnections, nodeServerOptions } from '../../src/runtime/node/connections.js';
import { budgetRequestBytes } from '../../src/runtime/node/bytes-in-flight.js';
import { capPipelinedRequests } from '../../src/runtime/node/pipelining.js';

const started: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of started.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const settings = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5000, maxConnections: 64 };

async function start(options: { maxPipelinedRequests?: number; budgetBytes?: number; maxRequestBytes?: number } = {}) {
  const app = new Hono();
  app.get('/health', (c) => c.text('ok'));
  app.post('/v1/completions', async (c) => c.text(`read ${(await c.req.text()).length}`));
  const budget = budgetRequestBytes(app.fetch, options.budgetBytes ?? 1 << 30, options.maxRequestBytes ?? 16 << 20);
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: budget.fetch, hostname: '127.0.0.1', port: 0, serverOptions: nodeServerOptions(settings) }, () => resolve(s as Server)) as Server;
  });
  started.push(server);
  capConnections(server, settings);
  const pipelining = capPipelinedRequests(server, options.maxPipelinedRequests ?? 16);
  return { port: (server.address() as AddressInfo).port, pipelining, budget: budget.stats };
}

function rawSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', () => {});
    socket.once('error', reject);
    sockets.push(socket);
  });
}

/** GET /health on a fresh connection: the status and how long it took. */
function health(port: number): Promise<{ status: number | string; ms: number }> {
  const startedAt = performance.now();
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/health', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - startedAt }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? error.message, ms: performance.now() - startedAt }));
    req.end();
  });
}

describe('pipelined requests per connection (family 8)', () => {
  it('4 connections × 5,000 pipelined GETs: each closed past the cap, /health answering all along', async () => {
    const { port, pipelining } = await start({ maxPipelinedRequests: 16 });
    const burst = 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(5000);
    const answered: number[] = [];
    const closed = await Promise.all(
      Array.from({ length: 4 }, async (_, i) => {
        const socket = await rawSocket(port);
        answered[i] = 0;
        socket.on('data', (data: Buffer) => {
          answered[i] += data.toString('latin1').split('HTTP/1.1 200').length - 1;
        });
        const done = new Promise<void>((resolve) => socket.once('close', () => resolve()));
        socket.write(burst);
        return done;
      }),
    );
    expect(closed).toHaveLength(4);
    const probes = await Promise.all(Array.from({ length: 5 }, () => health(port)));
    for (const probe of probes) {
      expect(probe.status).toBe(200);
      expect(probe.ms).toBeLessThan(1000);
    }
    expect(pipelining().closed).toBe(4);
    // No connection got anywhere near its 5,000 answers.
    for (const count of answered) expect(count).toBeLessThan(2000);
  });

  it('a client that waits for each answer on a keep-alive connection is never closed', async () => {
    const { port, pipelining } = await start({ maxPipelinedRequests: 2 });
    const socket = await rawSocket(port);
    let text = '';
    socket.on('data', (data: Buffer) => {
      text += data.toString('latin1');
    });
    for (let i = 1; i <= 10; i++) {
      socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
      await new Promise<void>((resolve) => {
        const check = () => (text.split('HTTP/1.1 200').length - 1 >= i ? resolve() : setTimeout(check, 5));
        check();
      });
    }
    expect(socket.destroyed).toBe(false);
    expect(pipelining().closed).toBe(0);
  });
});

describe('request bytes in flight (family 7)', () => {
  it('bodies held open past the budget are refused at once with a small 503; the held ones are not charged twice', async () => {
    const { port, budget } = await start({ budgetBytes: 4 << 20, maxRequestBytes: 1 << 20 });
    const head = (length: number) => `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
    // Four connections hold 1 MiB each, all but the last byte sent.
    const holders = await Promise.all(Array.from({ length: 4 }, () => rawSocket(port)));
    for (const socket of holders) socket.write(head(1 << 20) + 'x'.repeat((1 << 20) - 1));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(budget().reserved).toBe(4 << 20);
    // A fifth does not fit: refused before its body is read.
    const fifth = await rawSocket(port);
    let answer = '';
    fifth.on('data', (data: Buffer) => {
      answer += data.toString('latin1');
    });
    const startedAt = performance.now();
    fifth.write(head(1 << 20) + 'y'.repeat(1000));
    await new Promise<void>((resolve) => {
      const check = () => (answer.includes('\r\n\r\n{') && answer.endsWith('}') ? resolve() : setTimeout(check, 5));
      check();
    });
    expect(performance.now() - startedAt).toBeLessThan(1000);
    expect(answer).toMatch(/^HTTP\/1\.1 503/);
    expect(answer.toLowerCase()).toContain('retry-after: 1');
    expect(answer.length).toBeLessThan(1024);
    expect(answer).toMatch(/maxRequestBytesInFlight/);
    expect(budget().refused).toBe(1);
    // The holders finish: their budget comes back and a new request is served.
    for (const socket of holders) socket.write('x');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(budget().reserved).toBe(0);
    expect((await health(port)).status).toBe(200);
  });
});
