/**
 * Issue 41, families 11 and 12: the gateway distrusts its upstream and the client's headers.
 * Each of the audit's upstreams at a small scale, behind forwardOpenAI and a real
 * UpstreamPool: a redirect is a 502 naming it (the prompt never goes to the other origin), an
 * HTML answer is a 502 naming its type, a huge error body is read only up to its cap, an
 * event-stream line without a newline ends the stream with the error event once past the cap
 * (and costs linear time before that). Client addresses count only from trusted headers, and
 * the limiters' bucket maps stay bounded.
 */
import { describe, expect, it } from 'vitest';
import { UpstreamError } from '../../src/engine/remote/errors.js';
import { forwardOpenAI } from '../../src/gateway/openai-proxy.js';
import { UpstreamPool } from '../../src/gateway/upstream-pool.js';
import type { UpstreamTarget } from '../../src/gateway/upstreams.js';
import { capEventLines, MAX_UPSTREAM_ERROR_BODY_BYTES } from '../../src/gateway/upstream-guard.js';
import { clientAddress, trustedProxyFrom } from '../../src/gateway/client-address.js';
import { limitKey, MemoryRateLimiter, MemoryTokenBudget } from '../../src/gateway/edge-limits.js';
import { errorResponse } from '../../src/http/errors.js';

type Answer = (url: string, init?: RequestInit) => Response | Promise<Response>;

function poolAnswering(answer: Answer, calls: string[] = []): UpstreamPool {
  const target: UpstreamTarget = {
    name: 'fleet-a',
    url: 'http://fleet-a.internal',
    weight: 1,
    model: 'm',
    upstreamModel: 'm',
    dialect: 'vllm',
    unsupported: new Set(),
    timeouts: { connectMs: 2000, firstByteMs: 2000, idleMs: 2000 },
    toolCalls: false,
    async fetch(input, init) {
      calls.push(`${String(input)} redirect=${init?.redirect}`);
      return answer(String(input), init);
    },
  };
  return new UpstreamPool([target], { random: () => 0 });
}

const completion = { model: 'm', prompt: 'secret prompt', max_tokens: 2 };

/** What the client gets: the forwarded response, or the error mapped to the API's shape. */
async function answerFor(pool: UpstreamPool, body: unknown = completion): Promise<Response> {
  try {
    return await forwardOpenAI('completions', body, pool, null);
  } catch (error) {
    return errorResponse(error);
  }
}

/** A body of `bytes` bytes produced in 64 KiB chunks, counting how many the reader pulled. */
function endless(bytes: number, fill: number, pulled: { bytes: number }): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(64 * 1024).fill(fill);
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled.bytes >= bytes) return controller.close();
      pulled.bytes += chunk.byteLength;
      controller.enqueue(chunk);
    },
  }, { highWaterMark: 0 });
}

describe('the gateway distrusts its upstream', () => {
  it('a 307 is not followed: a 502 naming the redirect, and nothing is sent to its target', async () => {
    const calls: string[] = [];
    const pool = poolAnswering((url) => (url.includes('evil') ? Response.json({ choices: [{ text: 'stolen' }] }) : new Response(null, { status: 307, headers: { location: 'https://evil.example/v1/completions' } })), calls);
    const response = await answerFor(pool);
    expect(response.status).toBe(502);
    const text = await response.text();
    expect(text.length).toBeLessThan(1024);
    expect(JSON.parse(text).message).toMatch(/answered with a redirect \(HTTP 307 to https:\/\/evil\.example\); the gateway does not follow redirects/);
    expect(calls).toEqual(['http://fleet-a.internal/v1/completions redirect=manual']);
  });

  it('an HTML success is a 502 naming its content type, not relayed', async () => {
    const pool = poolAnswering(() => new Response('<html>login page</html>', { status: 200, headers: { 'content-type': 'text/html; charset=utf-8' } }));
    const response = await answerFor(pool);
    expect(response.status).toBe(502);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const message = (await response.json()).message;
    expect(message).toMatch(/Content-Type "text\/html"; an API answer is application\/json or text\/event-stream/);
    expect(message).not.toContain('login page');
  });

  it('a 500 with a 64 MiB body is read only up to the cap', async () => {
    const pulled = { bytes: 0 };
    const pool = poolAnswering(() => new Response(endless(64 * 1024 * 1024, 0x61, pulled), { status: 500, headers: { 'content-type': 'application/json' } }));
    const response = await answerFor(pool);
    expect(response.status).toBeGreaterThanOrEqual(500);
    expect((await response.text()).length).toBeLessThan(2048);
    expect(pulled.bytes).toBeLessThanOrEqual(MAX_UPSTREAM_ERROR_BODY_BYTES + 2 * 64 * 1024);
  });

  it('an event-stream line past the cap ends the stream with the error event and [DONE]; the upstream is not drained', async () => {
    const pulled = { bytes: 0 };
    const first = new TextEncoder().encode('data: {"choices":[{"text":"a"}]}\n\n');
    const rest = endless(64 * 1024 * 1024, 0x62, pulled);
    const upstreamBody = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(first);
      },
      async pull(controller) {
        const reader = rest.getReader();
        const { done, value } = await reader.read();
        reader.releaseLock();
        if (done) controller.close();
        else controller.enqueue(value);
      },
    }, { highWaterMark: 0 });
    const pool = poolAnswering(() => new Response(upstreamBody, { headers: { 'content-type': 'text/event-stream' } }));
    const response = await answerFor(pool, { ...completion, stream: true });
    expect(response.status).toBe(200);
    const started = performance.now();
    const text = await response.text();
    const elapsed = performance.now() - started;
    expect(text.startsWith('data: {"choices":[{"text":"a"}]}\n\n')).toBe(true);
    expect(text).toMatch(/data: \{"object":"error".*sent an event-stream line longer than 4194304 bytes.*\n\ndata: \[DONE\]\n\n$/s);
    expect(pulled.bytes).toBeLessThan(6 * 1024 * 1024);
    // Linear: ~5 MiB in 80 chunks; the quadratic re-split took seconds for this much (loaded-machine bound).
    expect(elapsed).toBeLessThan(5000);
  });

  it('the line cap counts across chunks and resets at each line feed', async () => {
    const encode = (text: string) => new TextEncoder().encode(text);
    const read = async (chunks: string[], cap: number) => {
      const source = new ReadableStream<Uint8Array>({ start(c) { for (const chunk of chunks) c.enqueue(encode(chunk)); c.close(); } });
      try {
        return await new Response(capEventLines(source, 'u', cap)).text();
      } catch (error) {
        return error instanceof UpstreamError ? 'cut' : 'other';
      }
    };
    expect(await read(['aaaa\nbb', 'bb\ncccc\n'], 4)).toBe('aaaa\nbbbb\ncccc\n');
    expect(await read(['aaa', 'aa\n'], 4)).toBe('cut');
    expect(await read(['a\naaaaa\nb'], 4)).toBe('cut');
  });
});

describe('client addresses only from trusted headers (family 12)', () => {
  const request = (headers: Record<string, string>, cf?: object) => {
    const r = new Request('https://gw.example/v1/completions', { method: 'POST', headers });
    if (cf !== undefined) Object.defineProperty(r, 'cf', { value: cf });
    return r;
  };

  it('outside Cloudflare a client-written CF-Connecting-IP or X-Forwarded-For picks no budget of its own', async () => {
    const limiter = new MemoryRateLimiter(3, 60);
    const trust = trustedProxyFrom(undefined);
    let passed = 0;
    for (let i = 0; i < 6; i++) {
      const key = limitKey(request({ 'cf-connecting-ip': `10.0.0.${i}`, 'x-forwarded-for': `10.1.0.${i}` }), null, trust);
      expect(key).toBe('anonymous');
      if ((await limiter.limit(key)).allowed) passed += 1;
    }
    expect(passed).toBe(3); // the audit: 6 of 6
  });

  it("on Cloudflare (the platform's cf object) CF-Connecting-IP names the client", () => {
    expect(clientAddress(request({ 'cf-connecting-ip': '203.0.113.7' }, { colo: 'AMS' }), { kind: 'cloudflare' })).toBe('203.0.113.7');
    expect(clientAddress(request({ 'cf-connecting-ip': 'x'.repeat(500) }, {}), { kind: 'cloudflare' })).toBeNull();
  });

  it('behind N trusted proxies, the address the outermost one saw; entries the client wrote are ignored', () => {
    const trust = trustedProxyFrom('x-forwarded-for:1');
    expect(clientAddress(request({ 'x-forwarded-for': '6.6.6.6, 198.51.100.4' }), trust)).toBe('198.51.100.4');
    expect(clientAddress(request({ 'x-forwarded-for': '6.6.6.6, 198.51.100.4, 10.0.0.2' }), trustedProxyFrom('x-forwarded-for:2'))).toBe('198.51.100.4');
    expect(clientAddress(request({ 'x-forwarded-for': '6.6.6.6' }), trustedProxyFrom('none'))).toBeNull();
    expect(() => trustedProxyFrom('x-forwarded-for')).toThrow(/GATEWAY_TRUSTED_PROXY must be/);
  });

  it('the bucket maps stay bounded however many addresses come', async () => {
    let now = 0;
    const limiter = new MemoryRateLimiter(3, 60, () => now, 1000);
    const tokens = new MemoryTokenBudget(1000, () => now, 1000);
    for (let i = 0; i < 20_000; i++) {
      now += 1;
      await limiter.limit(`ip:${i}`);
      tokens.spend(`ip:${i}`, 5);
    }
    expect(limiter.buckets.size).toBeLessThanOrEqual(1000);
    expect(tokens.buckets.size).toBeLessThanOrEqual(1000);
    // A key still draining keeps its count while room is made from refilled ones.
    now += 1;
    const hot = 'ip:hot';
    for (let i = 0; i < 3; i++) expect((await limiter.limit(hot)).allowed).toBe(true);
    expect((await limiter.limit(hot)).allowed).toBe(false);
  });
});
