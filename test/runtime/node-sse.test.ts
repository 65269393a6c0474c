import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sseResponse } from '../../src/http/sse.js';
import { writingSseDirectly } from '../../src/runtime/node/sse.js';

// The same app served twice: through @hono/node-server's web-stream path, and with SSE
// bodies written straight into the ServerResponse. A client must not see a difference.
let cancelled = 0;

async function* story(): AsyncGenerator<string> {
  yield '{"text":"Once"}';
  yield '{"text":" upon \\u00e9 — 😀"}';
  yield '[DONE]';
}
async function* failing(): AsyncGenerator<string> {
  yield '{"text":"ok"}';
  throw new Error('engine exploded');
}

function app(): Hono {
  const hono = new Hono();
  hono.get('/story', () => sseResponse(story(), () => cancelled++));
  hono.get('/failing', () => sseResponse(failing()));
  hono.get('/json', (c) => c.json({ plain: true }));
  hono.use('*', async (c, next) => {
    await next();
    c.res.headers.set('x-after', 'middleware');
  });
  return hono;
}

function listen(fetch: Parameters<typeof serve>[0]['fetch']): Promise<{ server: ServerType; url: string }> {
  return new Promise((resolve) => {
    const server = serve({ fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) =>
      resolve({ server, url: `http://127.0.0.1:${info.port}` }),
    );
  });
}

/** Status, headers (without the date) and the raw body bytes of a GET. */
function rawGet(url: string): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const { date: _date, ...headers } = response.headers;
          resolve({ status: response.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
        });
      })
      .on('error', reject);
  });
}

let web: { server: ServerType; url: string };
let direct: { server: ServerType; url: string };

beforeAll(async () => {
  const hono = app();
  web = await listen(hono.fetch);
  direct = await listen(writingSseDirectly(hono.fetch));
});
afterAll(async () => {
  for (const { server } of [web, direct]) await new Promise((resolve) => server.close(resolve));
});

describe('writingSseDirectly', () => {
  it.each(['/story', '/failing', '/json'])('%s: the same status, headers and bytes as the web-stream path', async (path) => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const expected = await rawGet(web.url + path);
    const actual = await rawGet(direct.url + path);
    logged.mockRestore();
    expect(actual.status).toBe(expected.status);
    expect(actual.headers).toEqual(expected.headers);
    expect(actual.body.equals(expected.body)).toBe(true);
  });

  it('frames each payload as an SSE event, and an exception as a last error event', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const story = (await rawGet(direct.url + '/story')).body.toString('utf8');
    const failed = (await rawGet(direct.url + '/failing')).body.toString('utf8');
    logged.mockRestore();
    expect(story).toBe('data: {"text":"Once"}\n\ndata: {"text":" upon \\u00e9 — 😀"}\n\ndata: [DONE]\n\n');
    const events = failed.split('\n\n').filter(Boolean);
    expect(events[0]).toBe('data: {"text":"ok"}');
    expect(JSON.parse(events[1]!.slice('data: '.length))).toMatchObject({ object: 'error', code: 500 });
    expect(events).toHaveLength(2);
  });

  it('takes the events over instead of reading the web body; a JSON response passes through', async () => {
    const getReader = vi.spyOn(ReadableStream.prototype, 'getReader');
    await rawGet(direct.url + '/story');
    const readsDirect = getReader.mock.calls.length;
    await rawGet(web.url + '/story');
    const readsWeb = getReader.mock.calls.length - readsDirect;
    getReader.mockRestore();
    expect(readsDirect).toBe(0);
    expect(readsWeb).toBeGreaterThan(0);
    expect(JSON.parse((await rawGet(direct.url + '/json')).body.toString())).toEqual({ plain: true });
    expect(cancelled).toBe(0);
  });
});
