/**
 * `npm start`'s server as a public endpoint: the API key with the official client, the
 * loopback-only Host default, slow clients closed by the header and request timeouts,
 * and the connection cap.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type RunningServer } from './spawn-server.js';

function configFile(settings: Record<string, unknown>): string {
  const path = join(mkdtempSync(join(tmpdir(), 'edge-llm-public-')), 'config.json');
  writeFileSync(path, JSON.stringify(settings));
  return path;
}

/** A raw status line and headers for a request with a chosen Host header (fetch cannot set Host). */
function getWithHost(url: string, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end();
  });
}

function openSocket(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.on('error', reject);
  });
}

/** Everything the server sends on `socket` until it closes the connection. */
function untilClosed(socket: Socket): Promise<string> {
  let received = '';
  socket.on('data', (data: Buffer) => (received += data.toString()));
  return new Promise((resolve) => socket.on('close', () => resolve(received)));
}

describe('npm start with an API key', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await spawnServer({ API_KEY: 'sk-e2e-key' });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('refuses the official client without the right key (AuthenticationError) and serves it with the key', async () => {
    const wrong = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
    const error = await wrong.completions.create({ model: 'stories260k', prompt: 'Hi', max_tokens: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((error as InstanceType<typeof OpenAI.AuthenticationError>).status).toBe(401);
    const right = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-e2e-key', maxRetries: 0 });
    const completion = await right.completions.create({ model: 'stories260k', prompt: 'Once upon a time', max_tokens: 3, temperature: 0 });
    expect(completion.usage?.completion_tokens).toBe(3);
    const models = await right.models.list();
    expect(models.data[0]!.id).toBe('stories260k');
  });

  it('keeps /health, /metrics, /version and the playground open', async () => {
    for (const path of ['/health', '/metrics', '/version', '/']) expect((await fetch(`${server.url}${path}`)).status, path).toBe(200);
    expect(await (await fetch(`${server.url}/version`)).json()).toEqual({ version: expect.any(String) });
  });

  it('answers only to loopback names and IP literals (listening on 127.0.0.1, allowedHosts unset)', async () => {
    expect(await getWithHost(server.url, '/health', 'attacker.example')).toBe(403);
    expect(await getWithHost(server.url, '/health', 'localhost:8080')).toBe(200);
    expect(await getWithHost(server.url, '/health', new URL(server.url).host)).toBe(200);
  });

  it('writes one JSON log line per request, without the prompt', async () => {
    await fetch(`${server.url}/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-e2e-key', 'x-request-id': 'e2e-log-line' },
      body: JSON.stringify({ prompt: 'A secret prompt', max_tokens: 2 }),
    });
    const line = server.output().split('\n').find((l) => l.includes('"e2e-log-line"'));
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({ id: 'e2e-log-line', route: '/generate', status: 200, generation_tokens: 2 });
    expect(server.output()).not.toContain('A secret prompt');
  });
});

describe('npm start against slow and many clients', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await spawnServer({ CONFIG: configFile({ headersTimeoutMs: 300, requestTimeoutMs: 600, maxConnections: 3 }) });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('closes a connection whose headers never end (headersTimeoutMs) with a 408', async () => {
    const socket = await openSocket(server.url);
    const closed = untilClosed(socket);
    socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    expect(await closed).toMatch(/^HTTP\/1\.1 408/);
  });

  it('closes a connection whose body never arrives in full (requestTimeoutMs) with a 408', async () => {
    const socket = await openSocket(server.url);
    const closed = untilClosed(socket);
    socket.write('POST /generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"prompt"');
    expect(await closed).toMatch(/^HTTP\/1\.1 408/);
  });

  it('past maxConnections the oldest idle connection makes room: silent sockets do not lock out a request', async () => {
    const held = await Promise.all([openSocket(server.url), openSocket(server.url), openSocket(server.url)]);
    try {
      const oldestClosed = untilClosed(held[0]!);
      const response = await fetch(`${server.url}/health`);
      expect(response.status).toBe(200);
      // The oldest silent one was closed without a byte to make room.
      expect(await oldestClosed).toBe('');
    } finally {
      for (const socket of held) socket.destroy();
    }
  });

  it('closes a socket that never sends a request after headersTimeoutMs', async () => {
    const socket = await openSocket(server.url);
    expect(await untilClosed(socket)).toBe('');
  });
});
