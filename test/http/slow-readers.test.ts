/**
 * Issue 41, family 6: streams whose clients stop reading, on a real node:http server as
 * `npm start` builds it (SSE written straight into the response, writingSseDirectly). The
 * audit: a client that never reads an n = 32 stream with logprobs left 13–25 MB of output in
 * the server per stream, and the server grew by 443 MB in two minutes; at shutdown such
 * streams were cut mid-event. Here the client sends its request and pauses its socket (it
 * reads nothing more), and the test checks what a user would: the generation stops (the
 * engine's running count drops to 0), the output held for it stays under the stream's
 * bound, a reading client meanwhile gets its full answer, and the paused client, once it
 * reads again, finds whole events ending with the 408 error event and [DONE].
 */
import type { Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { serve } from '@hono/node-server';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import type { SchedulerLimits } from '../../src/engine/scheduler-limits.js';
import { HttpError } from '../../src/http/errors.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { LiveSseStreams, writingSseDirectly, type DirectSseOptions } from '../../src/runtime/node/sse.js';
import { MODEL, MODEL_DIR, golden, testApp } from './helpers.js';

const engines: LocalEngine[] = [];
const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
afterAll(async () => {
  for (const engine of engines) await engine.dispose();
});

async function start(limits: Partial<SchedulerLimits>, options: DirectSseOptions = {}) {
  const engine = (await createNodeEngine({ modelDir: MODEL_DIR, servedModelName: MODEL, limits })) as LocalEngine;
  engines.push(engine);
  const app = testApp(engine);
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: writingSseDirectly(app.fetch, options), hostname: '127.0.0.1', port: 0 }, () => resolve(s as Server)) as Server;
  });
  servers.push(server);
  return { engine, port: (server.address() as AddressInfo).port };
}

/** The audit's stream: 32 sequences, 20 logprobs per token, as many tokens as maxLogprobEntries allows (~10 MB of events). */
const WIDE_STREAM = { model: MODEL, prompt: golden.prompt, n: 32, logprobs: 20, max_tokens: 380, ignore_eos: true, temperature: 1, seed: 7, stream: true };

/** Sends a POST over a raw socket and reads nothing (paused): the client that stopped reading. */
async function pausedClient(port: number, body: unknown): Promise<{ socket: Socket; resume(): Promise<Buffer> }> {
  const socket = await new Promise<Socket>((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
  sockets.push(socket);
  socket.on('error', () => {});
  socket.pause();
  const json = JSON.stringify(body);
  socket.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`);
  return {
    socket,
    resume: () =>
      new Promise<Buffer>((resolve) => {
        const chunks: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.on('close', () => resolve(Buffer.concat(chunks)));
        socket.resume();
      }),
  };
}

/** The events of a raw chunked HTTP/1.1 SSE response, asserting each one is whole. */
function wholeEvents(raw: Buffer): string[] {
  const head = raw.indexOf('\r\n\r\n');
  expect(raw.subarray(0, head).toString('latin1')).toMatch(/^HTTP\/1\.1 200/);
  // Undo the chunked framing.
  const parts: Buffer[] = [];
  let at = head + 4;
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at);
    const size = parseInt(raw.subarray(at, lineEnd).toString('latin1'), 16);
    if (!(size > 0)) break;
    parts.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  const body = Buffer.concat(parts).toString('utf8');
  expect(body.endsWith('\n\n')).toBe(true);
  const events = body.slice(0, -2).split('\n\n');
  for (const event of events) {
    expect(event.startsWith('data: ')).toBe(true);
    if (event !== 'data: [DONE]') JSON.parse(event.slice(6));
  }
  return events.map((event) => event.slice(6));
}

async function until(condition: () => boolean, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A streamed completion read as it arrives, by an ordinary client. */
async function readingClient(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt: golden.prompt, max_tokens: golden.completion_ids.length, temperature: 0, stream: true }),
  });
  expect(response.status).toBe(200);
  const events = (await response.text()).split('\n\n').filter((event) => event.startsWith('data: {'));
  return events.map((event) => (JSON.parse(event.slice(6)) as { choices: { text: string }[] }).choices[0]?.text ?? '').join('');
}

describe('a stream whose client stops reading (family 6)', () => {
  it('past maxStreamUnreadBytes: the generation stops, its output is dropped, a reading client is served, the stream ends with the 408 event', async () => {
    const cap = 256 * 1024;
    const { engine, port } = await start({ maxStreamUnreadBytes: cap });
    const client = await pausedClient(port, WIDE_STREAM);
    let maxUnread = 0;
    let generating = false;
    await until(() => {
      const stats = engine.stats();
      maxUnread = Math.max(maxUnread, stats.unreadOutputBytes ?? 0);
      if (stats.running > 0) generating = true;
      return generating && stats.running === 0;
    }, 60_000);
    // It stopped early: the request asked for 32 × 480 tokens.
    expect(engine.stats().generatedTokens).toBeLessThan(32 * 380);
    // One step's deltas of 32 sequences (~40 KB) past the bound at most; then dropped.
    expect(maxUnread).toBeLessThan(cap + 64 * 1024);
    expect(engine.stats().unreadOutputBytes).toBe(0);
    // The client is still connected (it only stopped reading) and others are served in full.
    expect(client.socket.destroyed).toBe(false);
    expect(await readingClient(port)).toBe(golden.completion_text);
    // Reading again, the paused client gets whole events: what had been sent, then the error and [DONE].
    const events = wholeEvents(await client.resume());
    expect(events.at(-1)).toBe('[DONE]');
    const error = JSON.parse(events.at(-2)!) as { error: { code: number; type: string; message: string } };
    expect(error.error.code).toBe(408);
    expect(error.error.type).toBe('RequestTimeoutError');
    expect(error.error.message).toContain('maxStreamUnreadBytes');
    expect(events.length).toBeGreaterThan(100);
  }, 90_000);

  it('past streamWriteTimeoutMs (200 ms here: generation is fast) with nothing read: the generation stops and the 408 event is written whole', async () => {
    // A stream bound too large to matter: only the write timeout ends this one.
    const { engine, port } = await start({ maxStreamUnreadBytes: 1 << 30, maxUnreadBytesTotal: 1 << 30 }, { writeTimeoutMs: 200 });
    const client = await pausedClient(port, WIDE_STREAM);
    let generating = false;
    await until(() => {
      const { running } = engine.stats();
      if (running > 0) generating = true;
      return generating && running === 0;
    }, 60_000);
    expect(engine.stats().generatedTokens).toBeLessThan(32 * 380);
    const events = wholeEvents(await client.resume());
    expect(events.at(-1)).toBe('[DONE]');
    const error = JSON.parse(events.at(-2)!) as { error: { code: number; message: string } };
    expect(error.error.code).toBe(408);
    expect(error.error.message).toContain('streamWriteTimeoutMs');
  }, 90_000);

  it('past maxUnreadBytesTotal: the stream holding most unread output is the one ended', async () => {
    const { engine, port } = await start({ maxStreamUnreadBytes: 1 << 30, maxUnreadBytesTotal: 512 * 1024 });
    const wide = await pausedClient(port, WIDE_STREAM);
    let generating = false;
    let maxUnread = 0;
    await until(() => {
      const stats = engine.stats();
      maxUnread = Math.max(maxUnread, stats.unreadOutputBytes ?? 0);
      if (stats.running > 0) generating = true;
      return generating && stats.running === 0;
    }, 60_000);
    expect(maxUnread).toBeLessThan(512 * 1024 + 64 * 1024);
    expect(await readingClient(port)).toBe(golden.completion_text);
    const events = wholeEvents(await wide.resume());
    const error = JSON.parse(events.at(-2)!) as { error: { code: number; message: string } };
    expect(error.error.code).toBe(408);
    expect(error.error.message).toContain('maxUnreadBytesTotal');
  }, 90_000);

  it('at shutdown a stream nobody reads ends with the whole 503 error event, not cut mid-event', async () => {
    const streams = new LiveSseStreams();
    const { engine, port } = await start({ maxStreamUnreadBytes: 1 << 30, maxUnreadBytesTotal: 1 << 30 }, { streams });
    const client = await pausedClient(port, WIDE_STREAM);
    await until(() => (engine.stats().unreadOutputBytes ?? 0) > 256 * 1024, 60_000);
    expect(streams.size).toBe(1);
    // What the server's shutdown does once its grace period is over (runtime/node/main.ts).
    expect(streams.endAll(new HttpError(503, 'ServiceUnavailableError', 'The server is shutting down.'))).toBe(1);
    await until(() => engine.stats().running === 0, 30_000);
    const events = wholeEvents(await client.resume());
    expect(events.at(-1)).toBe('[DONE]');
    const error = JSON.parse(events.at(-2)!) as { error: { code: number; message: string } };
    expect(error.error.code).toBe(503);
    expect(error.error.message).toBe('The server is shutting down.');
  }, 90_000);
});
