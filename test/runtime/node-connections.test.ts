/**
 * Idle connections cannot lock others out (issue 24): sockets that send nothing fill the
 * server's places, yet every legitimate request is served, because past maxConnections
 * the oldest idle socket is closed; idle sockets also end on their own (headers timeout,
 * keep-alive timeout). A bounded number of loopback sockets, a real node:http server.
 */
import { Agent, request as httpRequest, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { capConnections, nodeServerOptions } from '../../src/runtime/node/connections.js';

const started: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of started.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const settings = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5000, maxConnections: 16 };

async function start(overrides: Partial<typeof settings> = {}) {
  const config = { ...settings, ...overrides };
  const app = new Hono();
  app.get('/health', (c) => c.text('ok'));
  app.get('/slow', async (c) => {
    await new Promise((resolve) => setTimeout(resolve, 300));
    return c.text('done');
  });
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0, serverOptions: nodeServerOptions(config) }, () => resolve(s as Server)) as Server;
  });
  started.push(server);
  const { stats } = capConnections(server, config);
  return { port: (server.address() as AddressInfo).port, stats };
}

function idleSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', () => {});
    socket.once('error', reject);
    sockets.push(socket);
  });
}

/** GET on a fresh connection; the status, or the error code (ECONNRESET). */
function get(port: number, path = '/health', agent: Agent | false = false): Promise<number | string> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    req.end();
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('idle connections', () => {
  it('128 sockets that send nothing (8 × the cap) do not keep 32 requests from being served', async () => {
    const { port, stats } = await start();
    for (let i = 0; i < 128; i++) await idleSocket(port);
    await sleep(50);
    expect(stats().open).toBeLessThanOrEqual(settings.maxConnections);
    const statuses = [];
    for (let i = 0; i < 32; i++) statuses.push(await get(port));
    expect(statuses).toEqual(Array(32).fill(200));
    // Concurrent ones too.
    expect(await Promise.all(Array.from({ length: 8 }, () => get(port)))).toEqual(Array(8).fill(200));
    expect(stats().evicted).toBeGreaterThanOrEqual(128 - settings.maxConnections);
    expect(stats().refused).toBe(0);
  });

  it('busy connections are never evicted: past the cap with every place busy, the new one is dropped', async () => {
    const { port, stats } = await start({ maxConnections: 4 });
    const slow = Array.from({ length: 4 }, () => get(port, '/slow'));
    await sleep(100);
    expect(await get(port)).toMatch(/ECONNRESET|EPIPE/);
    expect(await Promise.all(slow)).toEqual([200, 200, 200, 200]);
    expect(stats().refused).toBe(1);
    expect(await get(port)).toBe(200);
  });

  it('evicts the oldest idle socket first, a keep-alive one between requests included', async () => {
    const { port } = await start({ maxConnections: 3 });
    const first = await idleSocket(port);
    const firstClosed = new Promise((resolve) => first.once('close', resolve));
    await idleSocket(port);
    await idleSocket(port);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect(await get(port, '/health', agent)).toBe(200);
    await firstClosed;
    expect(await get(port, '/health', agent)).toBe(200);
    agent.destroy();
  });

  it('a socket that never sends its request is closed after headersTimeoutMs', async () => {
    const { port, stats } = await start({ headersTimeoutMs: 200, requestTimeoutMs: 1000 });
    await idleSocket(port);
    await sleep(20);
    expect(stats().open).toBe(1);
    // The server lets go of it (headersTimeoutMs is 200): no request ever came.
    for (let waited = 0; stats().open > 0 && waited < 3000; waited += 20) await sleep(20);
    expect(stats().open).toBe(0);
  });

  it('a keep-alive socket is closed after keepAliveTimeoutMs between requests', async () => {
    const { port, stats } = await start({ keepAliveTimeoutMs: 200 });
    const agent = new Agent({ keepAlive: true });
    expect(await get(port, '/health', agent)).toBe(200);
    expect(stats().open).toBe(1);
    for (let waited = 0; stats().open > 0 && waited < 3000; waited += 50) await sleep(50);
    expect(stats().open).toBe(0);
    agent.destroy();
  });
});

describe('busy connections', () => {
  it('a request that outlasts headersTimeoutMs is not cut', async () => {
    const { port } = await start({ headersTimeoutMs: 100, requestTimeoutMs: 100 });
    expect(await get(port, '/slow')).toBe(200);
  });
});
