import type { Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { it } from 'vitest';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { writingSseDirectly } from '../../src/runtime/node/sse.js';
import { MODEL, MODEL_DIR, golden, testApp } from './helpers.js';
for (const [label, limits] of [['uncapped', { maxStreamUnreadBytes: 1 << 30, maxUnreadBytesTotal: 1 << 30 }], ['defaults', {}]] as const) {
  it(label, async () => {
    const engine = (await createNodeEngine({ modelDir: MODEL_DIR, servedModelName: MODEL, limits })) as LocalEngine;
    const app = testApp(engine);
    const server = await new Promise<Server>((resolve) => { const s = serve({ fetch: writingSseDirectly(app.fetch, {}), hostname: '127.0.0.1', port: 0 }, () => resolve(s as Server)) as Server; });
    const port = (server.address() as AddressInfo).port;
    (globalThis as any).gc?.();
    const rss0 = process.memoryUsage().rss;
    const body = JSON.stringify({ model: MODEL, prompt: golden.prompt, n: 32, logprobs: 20, max_tokens: 380, ignore_eos: true, temperature: 1, seed: 7, stream: true });
    const socks = [];
    for (let k = 0; k < 4; k++) {
      const s = connect(port, '127.0.0.1'); s.pause(); s.on('error', () => {}); socks.push(s);
      s.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    }
    let max = 0, gen = false;
    for (;;) { const st = engine.stats(); max = Math.max(max, st.unreadOutputBytes ?? 0); if (st.running > 0) gen = true; if (gen && st.running === 0) break; await new Promise((r) => setTimeout(r, 20)); }
    const rss1 = process.memoryUsage().rss;
    console.log(`${label}: 4 paused n=32 logprobs=20 streams: max unread ${(max / 2 ** 20).toFixed(1)} MiB, rss +${((rss1 - rss0) / 2 ** 20).toFixed(0)} MiB, tokens ${engine.stats().generatedTokens}`);
    for (const s of socks) s.destroy(); server.closeAllConnections(); server.close(); await engine.dispose();
  }, 120000);
}
