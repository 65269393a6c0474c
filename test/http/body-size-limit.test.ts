import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodySizeLimit } from '../../src/http/body-size-limit.js';

const LIMIT = 100;
let server: ServerType;
let url: string;
const app = new Hono();
app.use(bodySizeLimit(LIMIT, (c) => c.text('too large', 413)));
app.post('/echo', async (c) => c.text(String((await c.req.text()).length)));

beforeAll(async () => {
  await new Promise<void>((resolve) => {
    server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => {
      url = `http://127.0.0.1:${info.port}/echo`;
      resolve();
    });
  });
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

/** POSTs `size` bytes, with a Content-Length or chunked (in two writes). */
function post(size: number, framing: 'content-length' | 'chunked'): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = framing === 'content-length' ? { 'content-length': String(size) } : { 'transfer-encoding': 'chunked' };
    const request = http.request(url, { method: 'POST', headers, agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
    });
    request.on('error', reject);
    const half = Math.floor(size / 2);
    request.write('x'.repeat(half));
    request.end('x'.repeat(size - half));
  });
}

describe('bodySizeLimit', () => {
  it.each(['content-length', 'chunked'] as const)('%s: a body within the limit reaches the route whole', async (framing) => {
    expect(await post(LIMIT, framing)).toEqual({ status: 200, text: String(LIMIT) });
  });

  it.each(['content-length', 'chunked'] as const)('%s: a body over the limit is refused with the 413', async (framing) => {
    expect(await post(LIMIT + 1, framing)).toEqual({ status: 413, text: 'too large' });
  });

  it('judges a declared length by its header, before any byte is read', async () => {
    const response = await app.request('/echo', { method: 'POST', headers: { 'content-length': String(LIMIT * 10) }, body: 'short' });
    expect(response.status).toBe(413);
  });
});
