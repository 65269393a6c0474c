/**
 * Over HTTPS the connection goes to the checked address while TLS still verifies the
 * certificate against the host name (SNI and identity check keep the name).
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveMediaConfig } from '../../src/media/config.js';
import { createNodeMediaFetcher, createNodeTransport } from '../../src/media/node.js';
import { smallPng } from './helpers/fixtures.js';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/media/${name}`, import.meta.url));
const cert = fixture('media-test.cert.pem');
const key = fixture('media-test.key.pem');

let server: https.Server;
let port: number;
const servernames: (string | false | null)[] = [];

beforeAll(async () => {
  server = https.createServer({ cert, key }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(smallPng());
  });
  server.on('secureConnection', (socket) => servernames.push(socket.servername));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function fetcher() {
  const config = resolveMediaConfig({ allowedDomains: ['media.test', 'other.test'], allowPrivateAddresses: ['127.0.0.1/32'], totalTimeoutMs: 3000 });
  return createNodeMediaFetcher(config, {
    resolve: async () => ['127.0.0.1'],
    transport: createNodeTransport({ tls: { ca: cert } }),
  });
}

describe('HTTPS with a pinned address', () => {
  it('fetches from the checked address with SNI and certificate checked for the name', async () => {
    const media = await fetcher().fetch(`https://media.test:${port}/a.png`, 'image');
    expect(media.format).toBe('png');
    expect(servernames.at(-1)).toBe('media.test');
  });

  it('refuses a host whose certificate does not match, even at the same address', async () => {
    await expect(fetcher().fetch(`https://other.test:${port}/a.png`, 'image')).rejects.toMatchObject({
      reason: 'fetch_failed',
      message: expect.stringContaining('other.test'),
    });
  });
});
